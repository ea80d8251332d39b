// StepBatcher: the decode steps of sessions that generate at the same time, run as one backend
// step (Backend::forward_many). Decode reads every weight once per step, so N sessions replying
// together cost about what one does; each session's tokens and logits are bit for bit those it
// gets alone, and a session that generates alone never waits.
//
// Whoever finds no step running leads the next one: it waits for the sessions that were in the
// last step and are still generating (half a step's time at most, within 1-10 ms), then runs
// every queued step. A session that missed a step (its text callback took long) is not waited
// for again until it has joined one, so a slow callback holds the others up once, not at every
// token.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>

#include "backend/backend.h"

namespace parley::engine {

struct StepStats {
  uint64_t steps = 0;   // decode steps run
  uint64_t tokens = 0;  // tokens they computed: tokens / steps sessions per step on average
};

class StepBatcher {
 public:
  // enabled = false (or a backend with max_sequences() of 1): every step runs on its own.
  StepBatcher(backend::Backend& backend, bool enabled);
  StepBatcher(const StepBatcher&) = delete;
  StepBatcher& operator=(const StepBatcher&) = delete;

  // A session's decode loop, from before its first step until after its last.
  class Decoder {
   public:
    explicit Decoder(StepBatcher& batcher);
    ~Decoder();
    Decoder(const Decoder&) = delete;
    Decoder& operator=(const Decoder&) = delete;

    // Runs the step, alone or with other sessions' steps, and returns once it is done.
    // Throws what the backend threw for it.
    void step(const backend::SequenceStep& step);

   private:
    friend class StepBatcher;
    StepBatcher& batcher_;
    uint64_t last_step_ = 0;  // the number of the last step it took part in (0: none)
  };

  StepStats stats() const;

 private:
  // A step waiting to run, on its session's stack. Queued and batched through `next`, so that
  // nothing is allocated under the lock (a failed allocation there would strand the waiters).
  struct Waiter {
    const backend::SequenceStep* step;
    Decoder* decoder;
    Waiter* next = nullptr;
    bool done = false;
    std::exception_ptr error{};
  };

  // Gathers, runs and finishes one step; the lock is held on entry and on return.
  void lead(std::unique_lock<std::mutex>& lock);
  bool all_in_rhythm_queued() const;
  Waiter* take_batch();
  void run(Waiter* batch) noexcept;
  void run_alone(Waiter& w) noexcept;

  backend::Backend& backend_;
  const bool enabled_;
  const uint32_t max_sequences_;
  const uint32_t max_rows_;

  std::mutex mutex_;  // guards the members below and the decoders' last_step_
  std::condition_variable changed_;
  Waiter* queue_head_ = nullptr;
  Waiter* queue_tail_ = nullptr;
  uint64_t step_number_ = 0;  // of the last step run
  uint32_t in_rhythm_ = 0;    // decoders that took part in it and are still generating
  bool leading_ = false;      // a leader is gathering or running a step
  std::chrono::steady_clock::duration last_step_time_{};

  std::atomic<uint64_t> steps_{0}, tokens_{0};
};

}  // namespace parley::engine

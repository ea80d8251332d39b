#include "engine/step_batcher.h"

#include <algorithm>
#include <vector>

namespace parley::engine {

using std::chrono::steady_clock;

namespace {

// How long a leader waits for the sessions of the last step: half a step, but at least what
// waking a thread takes on a busy machine (a session hands over its token from another thread
// that must be woken first), and at most 10 ms.
steady_clock::duration patience(steady_clock::duration last_step_time) {
  using namespace std::chrono_literals;
  return std::clamp<steady_clock::duration>(last_step_time / 2, 1ms, 10ms);
}

}  // namespace

StepBatcher::StepBatcher(backend::Backend& backend, bool enabled)
    : backend_(backend),
      enabled_(enabled && backend.max_sequences() > 1),
      max_sequences_(backend.max_sequences()),
      max_rows_(backend.max_batch()) {}

StepBatcher::Decoder::Decoder(StepBatcher& batcher) : batcher_(batcher) {}

StepBatcher::Decoder::~Decoder() {
  StepBatcher& b = batcher_;
  if (!b.enabled_) return;
  std::lock_guard lock(b.mutex_);
  if (last_step_ != 0 && last_step_ == b.step_number_) {
    --b.in_rhythm_;
    b.changed_.notify_all();  // a leader may be waiting for this one
  }
}

void StepBatcher::Decoder::step(const backend::SequenceStep& step) {
  StepBatcher& b = batcher_;
  Waiter w{&step, this};
  if (!b.enabled_) {
    b.run_alone(w);
    if (w.error) std::rethrow_exception(w.error);
    return;
  }
  std::unique_lock lock(b.mutex_);
  (b.queue_tail_ ? b.queue_tail_->next : b.queue_head_) = &w;
  b.queue_tail_ = &w;
  b.changed_.notify_all();
  while (!w.done) {
    if (b.leading_) {
      b.changed_.wait(lock);
    } else {
      b.lead(lock);
    }
  }
  if (w.error) std::rethrow_exception(w.error);
}

StepStats StepBatcher::stats() const {
  return {steps_.load(std::memory_order_relaxed), tokens_.load(std::memory_order_relaxed)};
}

void StepBatcher::lead(std::unique_lock<std::mutex>& lock) {
  leading_ = true;
  changed_.wait_for(lock, patience(last_step_time_), [&] { return all_in_rhythm_queued(); });
  Waiter* batch = take_batch();
  lock.unlock();
  const auto started = steady_clock::now();
  run(batch);
  const auto took = steady_clock::now() - started;
  lock.lock();
  last_step_time_ = took;
  for (Waiter* w = batch; w;) {
    Waiter* next = w->next;  // w belongs to its thread once done is set
    w->done = true;
    w = next;
  }
  leading_ = false;
  changed_.notify_all();
}

bool StepBatcher::all_in_rhythm_queued() const {
  uint32_t queued = 0;
  for (const Waiter* w = queue_head_; w; w = w->next) {
    queued += w->decoder->last_step_ == step_number_ ? 1 : 0;
  }
  return queued >= in_rhythm_;
}

StepBatcher::Waiter* StepBatcher::take_batch() {
  Waiter *head = nullptr, *tail = nullptr;
  uint32_t sequences = 0, rows = 0;
  ++step_number_;
  while (queue_head_ && sequences < max_sequences_) {
    Waiter* w = queue_head_;
    const auto n = uint32_t(w->step->batch.tokens.size());
    if (head && rows + n > max_rows_) break;
    queue_head_ = w->next;
    w->next = nullptr;
    (tail ? tail->next : head) = w;
    tail = w;
    w->decoder->last_step_ = step_number_;
    ++sequences;
    rows += n;
  }
  if (!queue_head_) queue_tail_ = nullptr;
  // The sessions of this step are waited for next time; the others only once they join one.
  in_rhythm_ = sequences;
  return head;
}

void StepBatcher::run(Waiter* batch) noexcept {
  if (!batch->next) {
    run_alone(*batch);
    return;
  }
  try {
    std::vector<backend::SequenceStep> steps;
    uint64_t tokens = 0;
    for (const Waiter* w = batch; w; w = w->next) {
      steps.push_back(*w->step);
      tokens += w->step->batch.tokens.size();
    }
    backend_.forward_many(steps);
    steps_.fetch_add(1, std::memory_order_relaxed);
    tokens_.fetch_add(tokens, std::memory_order_relaxed);
    return;
  } catch (...) {
    // One session's failure must not become the others': each runs again alone and gets its
    // own outcome.
  }
  for (Waiter* w = batch; w; w = w->next) run_alone(*w);
}

void StepBatcher::run_alone(Waiter& w) noexcept {
  try {
    const backend::SequenceStep& s = *w.step;
    backend_.forward(s.batch, *s.kv, s.logits);
    steps_.fetch_add(1, std::memory_order_relaxed);
    tokens_.fetch_add(s.batch.tokens.size(), std::memory_order_relaxed);
  } catch (...) {
    w.error = std::current_exception();
  }
}

}  // namespace parley::engine

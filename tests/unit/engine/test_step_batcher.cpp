// StepBatcher over a backend that records how it is called: who shares a step, who waits,
// whose error is whose.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "engine/step_batcher.h"
#include "kv/kv_cache.h"

namespace parley::test {
namespace {

// Logits[0] = 2 x the step's token; token -1 fails. A shared step takes a millisecond, so a
// leader waits long enough for a partner that is a few microseconds late.
class RecordingBackend final : public backend::Backend {
 public:
  explicit RecordingBackend(uint32_t max_sequences) : max_sequences_(max_sequences) {}

  std::string name() const override { return "recording"; }
  uint32_t max_batch() const override { return 64; }
  uint32_t max_sequences() const override { return max_sequences_; }

  void forward(const backend::Batch& batch, kv::KvView&, std::span<float> logits) override {
    ++alone;
    compute(batch, logits);
  }

  void forward_many(std::span<const backend::SequenceStep> steps) override {
    ++shared;
    for (const auto& s : steps) {
      if (s.batch.tokens[0] < 0) fail(Status::invalid_argument, "token -1 in a shared step");
    }
    {
      std::lock_guard lock(mutex);
      sizes.push_back(steps.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (const auto& s : steps) compute(s.batch, s.logits);
  }

  std::atomic<int> alone{0}, shared{0};
  std::mutex mutex;
  std::vector<size_t> sizes;  // of the shared steps

 private:
  static void compute(const backend::Batch& batch, std::span<float> logits) {
    if (batch.tokens[0] < 0) fail(Status::invalid_argument, "token -1");
    logits[0] = 2.0f * float(batch.tokens[0]);
  }
  uint32_t max_sequences_;
};

// A sequence's cache, which the recording backend never reads.
struct UnreadCache {
  kv::KvCache cache{kv::KvType::f32, kv::KvShape{1, 1, 2}, 16};
};

// What one generating session does: `n` steps of token base + i, in step with `others`
// sessions through `sync` when given.
struct Stepper {
  Stepper(engine::StepBatcher& b, int32_t base_token, int steps, std::barrier<>* in_step = nullptr,
          int failing = -1)
      : batcher(b), base(base_token), n(steps), sync(in_step), failing_step(failing) {}

  engine::StepBatcher& batcher;
  int32_t base;
  int n;
  std::barrier<>* sync;
  int failing_step;  // this step's token is -1
  UnreadCache kv;

  int run() {
    engine::StepBatcher::Decoder decoder(batcher);
    int errors = 0;
    for (int i = 0; i < n; ++i) {
      if (sync) sync->arrive_and_wait();
      const int32_t token = i == failing_step ? -1 : base + i;
      float logit = -1;
      backend::SequenceStep step;
      step.batch.tokens = std::span<const int32_t>(&token, 1);
      step.batch.start_pos = uint32_t(i);
      step.kv = &kv.cache.view();
      step.logits = std::span<float>(&logit, 1);
      try {
        decoder.step(step);
        CHECK(logit == 2.0f * float(token));
      } catch (const Error& e) {
        CHECK(i == failing_step);
        CHECK(e.status() == Status::invalid_argument);
        ++errors;
      }
    }
    return errors;
  }
};

// Sessions in step with each other, each on its own thread from its base token, `n` steps
// each; the errors they saw, in all.
int run_in_step(engine::StepBatcher& batcher, const std::vector<int32_t>& bases, int n) {
  std::barrier sync(std::ptrdiff_t(bases.size()));
  std::vector<std::future<int>> sessions;
  for (int32_t base : bases) {
    sessions.push_back(std::async(std::launch::async,
                                  [&, base] { return Stepper{batcher, base, n, &sync}.run(); }));
  }
  int errors = 0;
  for (auto& s : sessions) errors += s.get();
  return errors;
}

}  // namespace

TEST_CASE("a session generating alone runs each step by itself") {
  RecordingBackend backend(8);
  engine::StepBatcher batcher(backend, true);
  CHECK(Stepper{batcher, 100, 20}.run() == 0);
  CHECK(backend.alone == 20);
  CHECK(backend.shared == 0);
  CHECK(batcher.stats().steps == 20);
  CHECK(batcher.stats().tokens == 20);
}

TEST_CASE("sessions generating at once share steps, each getting its own result") {
  RecordingBackend backend(8);
  engine::StepBatcher batcher(backend, true);
  CHECK(run_in_step(batcher, {0, 1000, 2000}, 40) == 0);
  CHECK(backend.shared > 0);
  const engine::StepStats s = batcher.stats();
  CHECK(s.tokens == 120);
  CHECK(s.steps == uint64_t(backend.alone + backend.shared));
  CHECK(s.steps < 120);
  for (size_t n : backend.sizes) CHECK((n >= 2 && n <= 3));
}

TEST_CASE("no more sequences share a step than the backend takes") {
  RecordingBackend backend(2);
  engine::StepBatcher batcher(backend, true);
  CHECK(run_in_step(batcher, {0, 500, 900}, 30) == 0);
  CHECK(backend.shared > 0);
  for (size_t n : backend.sizes) CHECK(n == 2);
  CHECK(batcher.stats().tokens == 90);
}

TEST_CASE("one session's failing step fails that session only") {
  RecordingBackend backend(8);
  engine::StepBatcher batcher(backend, true);
  std::barrier sync(2);
  auto a = std::async(std::launch::async, [&] { return Stepper{batcher, 0, 30, &sync}.run(); });
  auto b = std::async(std::launch::async,
                      [&] { return Stepper{batcher, 300, 30, &sync, /*failing_step=*/12}.run(); });
  CHECK(a.get() == 0);
  CHECK(b.get() == 1);
  CHECK(batcher.stats().tokens == 59);  // the failed step computed nothing
}

TEST_CASE("a session stalled between steps does not hold the others") {
  RecordingBackend backend(8);
  engine::StepBatcher batcher(backend, true);
  std::promise<void> a_finished;
  std::barrier sync(2);
  // b steps in time with a once, then waits for a to finish all of its steps: a batcher
  // that kept waiting for b would never let a finish.
  auto b = std::async(std::launch::async, [&] {
    engine::StepBatcher::Decoder decoder(batcher);
    const int32_t token = 7;
    float logit = 0;
    UnreadCache kv;
    backend::SequenceStep step;
    step.kv = &kv.cache.view();
    step.batch.tokens = std::span<const int32_t>(&token, 1);
    step.logits = std::span<float>(&logit, 1);
    sync.arrive_and_wait();
    decoder.step(step);
    a_finished.get_future().wait();
    decoder.step(step);
    return logit;
  });
  {
    engine::StepBatcher::Decoder decoder(batcher);
    UnreadCache kv;
    for (int i = 0; i < 50; ++i) {
      if (i == 0) sync.arrive_and_wait();
      const int32_t token = i;
      float logit = -1;
      backend::SequenceStep step;
      step.batch.tokens = std::span<const int32_t>(&token, 1);
      step.kv = &kv.cache.view();
      step.logits = std::span<float>(&logit, 1);
      decoder.step(step);
      CHECK(logit == 2.0f * float(i));
    }
  }
  a_finished.set_value();
  CHECK(b.get() == 14.0f);
  CHECK(batcher.stats().tokens == 52);
}

TEST_CASE("sessions step one by one when batching is off or the backend runs one at a time") {
  for (const auto& [enabled, max_sequences] : {std::pair{false, 8u}, std::pair{true, 1u}}) {
    RecordingBackend backend(max_sequences);
    engine::StepBatcher batcher(backend, enabled);
    CHECK(run_in_step(batcher, {0, 50}, 20) == 0);
    CHECK(backend.shared == 0);
    CHECK(backend.alone == 40);
    CHECK(batcher.stats().steps == 40);
  }
}

}  // namespace parley::test

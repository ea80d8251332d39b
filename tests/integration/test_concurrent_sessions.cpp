// Sessions that generate at the same time share decode steps: each still gets, token for
// token and logit for logit, the reply it gets alone; one that stops reading its reply for a
// while does not stop the others; a prompt computed meanwhile changes neither reply.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Reply {
  std::vector<int32_t> tokens;
  std::vector<float> last_logits;
};

// Holds each arriving thread until `n` have arrived (or a generous time has passed, so that a
// mistake elsewhere fails a check instead of hanging the test).
class Meeting {
 public:
  explicit Meeting(int n) : n_(n) {}
  void arrive() {
    std::unique_lock lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return arrived_ >= n_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int n_, arrived_ = 0;
};

// One turn; on_text(first) runs as each piece of the reply's text arrives (inside decoding).
Reply run_turn(engine::Session& s, const std::string& text, const engine::GenerateParams& p,
               const std::function<void(bool first)>& on_text = {}) {
  bool first = true;
  engine::TurnStats stats;
  const auto use = s.try_use();
  REQUIRE(use);
  s.send(text, p, [&](std::string_view) {
    if (on_text) on_text(first);
    first = false;
    return true;
  }, stats);
  const auto span = s.last_logits();
  return {s.tokens(), std::vector<float>(span.begin(), span.end())};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

engine::GenerateParams params(uint64_t seed) {
  engine::GenerateParams p;
  p.max_tokens = 48;
  p.ignore_eos = true;
  p.seed = seed;
  p.sampler.temperature = seed == 0 ? 0.0f : 0.9f;  // one greedy, the others sampled
  return p;
}

const std::vector<std::string> kPrompts = {"Once upon a time", "The little dog",
                                           "A girl named Lily went to the park"};

void check_shared_steps_change_nothing(const std::string& model, kv::KvType kv_type) {
  CAPTURE(model);
  CAPTURE(std::string(kv::kv_type_name(kv_type)));
  std::vector<Reply> alone;
  {
    auto engine = open_engine(model, kv_type);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      engine::Session s(engine, session_options("", "raw", "alone"));
      alone.push_back(run_turn(s, kPrompts[i], params(i)));
    }
    const engine::StepStats st = engine->stats().decode;
    CHECK(st.tokens == st.steps);  // one at a time, nothing shared
  }

  auto engine = open_engine(model, kv_type);
  Meeting all_decoding(int(kPrompts.size()));
  std::vector<std::future<Reply>> together;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    together.push_back(std::async(std::launch::async, [&, i] {
      engine::Session s(engine, session_options("", "raw", "together"));
      // Text handed over slowly: on a machine with fewer cores than threads, a session that
      // never sleeps could otherwise finish before the others are scheduled at all.
      return run_turn(s, kPrompts[i], params(i), [&](bool first) {
        if (first) all_decoding.arrive();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      });
    }));
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    CAPTURE(i);
    const Reply r = together[i].get();
    CHECK(r.tokens == alone[i].tokens);
    CHECK(same_bits(r.last_logits, alone[i].last_logits));
  }
  const engine::StepStats st = engine->stats().decode;
  CHECK(st.tokens == kPrompts.size() * (params(0).max_tokens - 1));
  CHECK(st.steps < st.tokens);  // some steps served two or three sessions
}

}  // namespace

TEST_CASE("sessions generating at once get the replies they get alone, bit for bit") {
  check_shared_steps_change_nothing(small_synthetic_model(), kv::KvType::int8);
  check_shared_steps_change_nothing(small_synthetic_model(), kv::KvType::f32);
  PARLEY_SHARED_OR_SKIP(stories, "models/stories260k/stories260k-f32.gguf");
  check_shared_steps_change_nothing(stories, kv::KvType::int8);
}

TEST_CASE("a session whose reader stalls does not stall the others") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  std::promise<void> others_done;
  std::shared_future<void> others_done_f = others_done.get_future().share();
  Meeting both_decoding(2);
  // The stalled session's callback waits, in its first text, for the other to finish all of
  // its reply (a caller that stopped reading a stream): sharing must not wait for it.
  auto stalled = std::async(std::launch::async, [&] {
    engine::Session s(engine, session_options("", "raw", "a"));
    return run_turn(s, kPrompts[0], params(0), [&](bool first) {
      if (!first) return;
      both_decoding.arrive();
      others_done_f.wait();
    });
  });
  {
    engine::Session s(engine, session_options("", "raw", "b"));
    const Reply r = run_turn(s, kPrompts[1], params(1), [&](bool first) {
      if (first) both_decoding.arrive();
    });
    CHECK(r.tokens.size() > params(1).max_tokens);
  }
  others_done.set_value();
  const Reply a = stalled.get();
  CHECK(a.tokens.size() > params(0).max_tokens);
}

TEST_CASE("a prompt computed while another session generates changes neither reply") {
  std::string long_prompt;
  for (int i = 0; i < 90; ++i) long_prompt += std::string(1, char('a' + i % 26)) + " ";
  for (kv::KvType kv_type : {kv::KvType::int8, kv::KvType::f32}) {
    CAPTURE(std::string(kv::kv_type_name(kv_type)));
    Reply generating_alone, prompted_alone;
    {
      auto engine = open_engine(small_synthetic_model(), kv_type);
      engine::Session a(engine, session_options("", "raw", "a"));
      generating_alone = run_turn(a, kPrompts[0], params(0));
      engine::Session b(engine, session_options("", "raw", "b"));
      prompted_alone = run_turn(b, long_prompt, params(1));
    }
    auto engine = open_engine(small_synthetic_model(), kv_type);
    std::promise<void> generating;
    auto prompted = std::async(std::launch::async, [&] {
      generating.get_future().wait();  // the prompt is computed while the other generates
      engine::Session b(engine, session_options("", "raw", "b"));
      return run_turn(b, long_prompt, params(1));
    });
    engine::Session a(engine, session_options("", "raw", "a"));
    const Reply r = run_turn(a, kPrompts[0], params(0), [&](bool first) {
      if (first) generating.set_value();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    CHECK(r.tokens == generating_alone.tokens);
    CHECK(same_bits(r.last_logits, generating_alone.last_logits));
    const Reply p = prompted.get();
    CHECK(p.tokens == prompted_alone.tokens);
    CHECK(same_bits(p.last_logits, prompted_alone.last_logits));
  }
}

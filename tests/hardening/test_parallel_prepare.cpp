// Sessions that start alike, prepared, scored, answered, given a new system prompt, answered
// again, exported and imported as copies that answer once more, from threads of their own at
// once: they compute and publish the same opening blocks side by side. Nothing may race (this
// runs under ThreadSanitizer too), and each thread's scores and replies must equal those of
// the same calls made alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "hardening_model.h"
#include "parley.h"
#include "support/c_api_options.h"

using namespace parley::test;

namespace {

constexpr int kThreads = 6;

struct Outcome {
  parley_status status = PARLEY_OK;
  std::string error;
  uint32_t prepared = 0;          // tokens the prepare computed
  double scores[2] = {0, 0};
  std::vector<int32_t> tokens;    // the conversation after its greedy turns
  std::vector<int32_t> copy_tokens;  // its imported copy's after one more
};

std::vector<int32_t> tokens_of(parley_session* s, parley_status& status) {
  size_t n = 0;
  status = parley_session_get_tokens(s, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  if (status == PARLEY_OK) status = parley_session_get_tokens(s, ids.data(), n, &n);
  return ids;
}

// The conversation exported and imported as `copy_id`, then one more greedy turn in the copy.
std::vector<int32_t> copy_and_answer(parley_engine* e, parley_session* s,
                                     const std::string& copy_id, parley_status& status) {
  size_t n = 0;
  status = parley_session_export(s, nullptr, 0, &n);
  std::string json(n, '\0');
  if (status == PARLEY_OK) status = parley_session_export(s, json.data(), n, &n);
  parley_session* copy = nullptr;
  if (status == PARLEY_OK) status = parley_session_import(e, json.c_str(), copy_id.c_str(), &copy);
  const parley_generate_options g = greedy_options(6);
  if (status == PARLEY_OK) status = parley_session_send(copy, " a", &g, nullptr, nullptr, nullptr);
  std::vector<int32_t> ids;
  if (status == PARLEY_OK) ids = tokens_of(copy, status);
  parley_session_close(copy);
  return ids;
}

std::string system_prompt() {
  std::string text;
  for (int i = 0; i < 10; ++i) text += "the quick brown fox jumps over the lazy dog ";
  return text;
}

// Prepare, score two replies, send, change the system prompt, prepare and send again, then
// copy: in a session of `scope` that starts with the shared system prompt.
Outcome run_calls(parley_engine* e, const char* scope, const std::string& copy_id) {
  Outcome out;
  const std::string system = system_prompt();
  parley_session_options so;
  parley_session_options_init(&so);
  so.system_prompt = system.c_str();
  so.chat_template = "raw";
  so.cache_scope = scope;
  parley_session* s = nullptr;
  out.status = parley_session_create(e, &so, &s);
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  if (out.status == PARLEY_OK) out.status = parley_session_prepare(s, &stats);
  out.prepared = stats.computed_tokens;
  const char* const replies[] = {"fox dog", "lazy quick brown"};
  if (out.status == PARLEY_OK) {
    out.status = parley_session_score_replies(s, " over", replies, 2, PARLEY_SCORE_WITH_END,
                                              out.scores, nullptr);
  }
  const parley_generate_options g = greedy_options(6);
  if (out.status == PARLEY_OK) {
    out.status = parley_session_send(s, " the", &g, nullptr, nullptr, nullptr);
  }
  if (out.status == PARLEY_OK) {
    out.status = parley_session_set_system_prompt(s, "a lazy dog sleeps under the brown tree");
  }
  if (out.status == PARLEY_OK) out.status = parley_session_prepare(s, nullptr);
  if (out.status == PARLEY_OK) {
    out.status = parley_session_send(s, " and", &g, nullptr, nullptr, nullptr);
  }
  if (out.status == PARLEY_OK) out.tokens = tokens_of(s, out.status);
  if (out.status == PARLEY_OK) out.copy_tokens = copy_and_answer(e, s, copy_id, out.status);
  if (out.status != PARLEY_OK) out.error = parley_last_error();
  parley_session_close(s);
  return out;
}

}  // namespace

TEST_CASE("sessions prepared, scored, re-prompted, answered and copied at once agree") {
  const parley_engine_options eo = engine_options(hardening_model(), "", 0, 0, 1);
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  const Outcome alone = run_calls(e, "alone", "copy-alone");
  REQUIRE_MESSAGE(alone.status == PARLEY_OK, alone.error);
  REQUIRE(alone.prepared > 0);
  // The copy went on from the whole conversation.
  REQUIRE(alone.copy_tokens.size() > alone.tokens.size());
  CHECK(std::equal(alone.tokens.begin(), alone.tokens.end(), alone.copy_tokens.begin()));

  std::vector<Outcome> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { outcomes[size_t(t)] = run_calls(e, "together", "copy-" + std::to_string(t)); });
  }
  for (auto& t : threads) t.join();
  uint32_t computed = 0;
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    const Outcome& o = outcomes[size_t(t)];
    REQUIRE_MESSAGE(o.status == PARLEY_OK, o.error);
    CHECK(o.scores[0] == alone.scores[0]);
    CHECK(o.scores[1] == alone.scores[1]);
    CHECK(o.tokens == alone.tokens);
    CHECK(o.copy_tokens == alone.copy_tokens);
    computed += o.prepared;
  }
  // Side by side several may compute the same blocks; none computes more than the opening.
  CHECK(computed >= alone.prepared);
  CHECK(computed <= alone.prepared * kThreads);
  parley_engine_close(e);
}

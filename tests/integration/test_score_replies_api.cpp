// parley_session_score_replies through the C ABI: the model's choice among replies (the
// reference trajectory's words over shuffled ones), counts, and a conversation left as it was,
// also one whose KV was in the store.
#include <doctest/doctest.h>

#include <string>

#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

TEST_CASE("parley_session_score_replies: the model's own words score above shuffled ones") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  parley_engine* e = open_engine_with_store(gguf.string(), (dir / "s.db").string());
  parley_session* s = create_raw_session(e, "story");
  // The words stories260K continues "Once upon a time," with (its greedy trajectory), and
  // the same words in another order.
  const char* const replies[] = {"there was a little girl named Lily.",
                                 "girl little Lily a there named was."};
  double logprobs[2] = {1, 1};
  uint32_t n_tokens[2] = {};
  REQUIRE_MESSAGE(parley_session_score_replies(s, "Once upon a time,", replies, 2,
                                               PARLEY_SCORE_WITH_END, logprobs, n_tokens) ==
                      PARLEY_OK,
                  parley_last_error());
  CHECK(logprobs[0] < 0);
  CHECK(logprobs[1] < logprobs[0] - 10);  // e^-10: not a close call
  CHECK(n_tokens[0] > 1);
  CHECK(n_tokens[1] > 1);
  CHECK(session_info(s).n_tokens == 0);  // nothing added

  // After a turn, suspended: the KV comes back for the scores, and the turn stays the last.
  const parley_generate_options g = greedy_options(6);
  REQUIRE(parley_session_send(s, "Once upon a time,", &g, nullptr, nullptr, nullptr) ==
          PARLEY_OK);
  const parley_session_info before = session_info(s);
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);
  CHECK(session_info(s).state == PARLEY_SESSION_SPILLED);
  double after_turn[2] = {};
  REQUIRE(parley_session_score_replies(s, " She", replies, 2, 0, after_turn, nullptr) ==
          PARLEY_OK);
  CHECK(session_info(s).state == PARLEY_SESSION_ACTIVE);
  CHECK(session_info(s).n_tokens == before.n_tokens);
  CHECK(session_info(s).n_turns == before.n_turns);
  parley_session_close(s);
  parley_engine_close(e);
}

// A session's overflow policy over the C API: read with parley_session_get_info, changed with
// parley_session_set_overflow (kept by the store), and what it changes for the next message
// that does not fit. A stored conversation longer than an engine's context is refused by
// parley_session_open as CONTEXT_FULL, and left whole for an engine whose context holds it.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

parley_engine* open_engine_with_context(const std::string& store_path, uint32_t context) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  const std::string& model = small_synthetic_model();  // context 128
  eo.model_path = model.c_str();
  eo.store_path = store_path.empty() ? nullptr : store_path.c_str();
  eo.context_length = context;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

parley_status send_greedy(parley_session* s, const std::string& text, uint32_t max_tokens,
                          parley_turn_stats* stats = nullptr) {
  parley_generate_options go;
  parley_generate_options_init(&go);
  go.temperature = 0;
  go.max_tokens = max_tokens;
  go.ignore_eos = 1;
  return parley_session_send(s, text.c_str(), &go, nullptr, nullptr, stats);
}

// Words of the synthetic model's vocabulary, n of them.
std::string words(size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) text += i % 2 ? " b" : " a";
  return text;
}

}  // namespace

TEST_CASE("parley_session_set_overflow: the next message that does not fit drops old ones") {
  parley_engine* e = open_engine_with_context("", 0);
  parley_session* s = create_raw_session(e, "policy");
  CHECK(session_info(s).overflow == PARLEY_OVERFLOW_ERROR);
  CHECK(std::string(session_info(s).chat_template) == "raw");

  // Unknown values are refused and change nothing.
  CHECK(parley_session_set_overflow(s, 2) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).find("PARLEY_OVERFLOW_") != std::string::npos);
  CHECK(parley_session_set_overflow(s, -1) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(session_info(s).overflow == PARLEY_OVERFLOW_ERROR);
  CHECK(parley_session_set_overflow(nullptr, PARLEY_OVERFLOW_ERROR) == PARLEY_E_INVALID_ARGUMENT);

  REQUIRE(send_greedy(s, words(30), 20) == PARLEY_OK);
  REQUIRE(send_greedy(s, words(30), 20) == PARLEY_OK);
  const uint32_t turns = session_info(s).n_turns;
  // 100 tokens in a context of 128: the next message does not fit.
  CHECK(send_greedy(s, words(30), 20) == PARLEY_E_CONTEXT_FULL);
  CHECK(session_info(s).n_turns == turns);

  REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);
  CHECK(session_info(s).overflow == PARLEY_OVERFLOW_DROP_OLDEST);
  CHECK(session_info(s).n_turns == turns);  // nothing is dropped by the change itself
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  REQUIRE(send_greedy(s, words(30), 20, &stats) == PARLEY_OK);
  CHECK(session_info(s).n_turns == turns);  // one exchange dropped, one added
  CHECK(stats.generated_tokens == 20);

  REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_ERROR) == PARLEY_OK);
  CHECK(send_greedy(s, words(30), 20) == PARLEY_E_CONTEXT_FULL);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a session's overflow policy and template are kept by the store") {
  const TempDir dir;
  const std::string store = (dir / "s.db").string();
  {
    parley_engine* e = open_engine_with_context(store, 0);
    parley_session_options so;
    parley_session_options_init(&so);
    so.id = "kept";
    so.chat_template = "chatml";
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
    CHECK(std::string(session_info(s).chat_template) == "chatml");
    REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);
    REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);  // no-op
    parley_session_close(s);
    parley_engine_close(e);
  }
  parley_engine* e = open_engine_with_context(store, 0);
  parley_session* s = nullptr;
  REQUIRE(parley_session_open(e, "kept", &s) == PARLEY_OK);
  CHECK(session_info(s).overflow == PARLEY_OVERFLOW_DROP_OLDEST);
  CHECK(std::string(session_info(s).chat_template) == "chatml");
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("an older caller's smaller parley_session_info gets the fields it knows") {
  parley_engine* e = open_engine_with_context("", 0);
  parley_session* s = create_raw_session(e, "old-caller");
  parley_session_info info;
  std::memset(&info, 0xab, sizeof info);
  info.struct_size = offsetof(parley_session_info, chat_template);  // a 0.7 caller's size
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  CHECK(std::string(info.id) == "old-caller");
  CHECK(static_cast<unsigned char>(info.chat_template[0]) == 0xab);  // not written
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a stored conversation longer than the engine's context: CONTEXT_FULL, kept whole") {
  const TempDir dir;
  const std::string store = (dir / "s.db").string();
  uint32_t stored_turns = 0;
  {
    parley_engine* e = open_engine_with_context(store, 0);
    parley_session* s = create_raw_session(e, "long");
    REQUIRE(send_greedy(s, words(30), 20) == PARLEY_OK);
    REQUIRE(send_greedy(s, words(30), 20) == PARLEY_OK);
    stored_turns = session_info(s).n_turns;
    parley_session_close(s);
    parley_engine_close(e);
  }
  for (const int32_t policy : {PARLEY_OVERFLOW_ERROR, PARLEY_OVERFLOW_DROP_OLDEST}) {
    CAPTURE(policy);
    {
      parley_engine* e = open_engine_with_context(store, 0);
      parley_session* s = nullptr;
      REQUIRE(parley_session_open(e, "long", &s) == PARLEY_OK);
      REQUIRE(parley_session_set_overflow(s, policy) == PARLEY_OK);
      parley_session_close(s);
      parley_engine_close(e);
    }
    parley_engine* small = open_engine_with_context(store, 64);
    parley_session* s = nullptr;
    CHECK(parley_session_open(small, "long", &s) == PARLEY_E_CONTEXT_FULL);
    CHECK(s == nullptr);
    const std::string message = parley_last_error();
    CHECK(message.find("context holds 64") != std::string::npos);
    CHECK(message.find("nothing was changed") != std::string::npos);
    parley_engine_close(small);
  }
  parley_engine* e = open_engine_with_context(store, 0);
  parley_session* s = nullptr;
  REQUIRE(parley_session_open(e, "long", &s) == PARLEY_OK);
  CHECK(session_info(s).n_turns == stored_turns);
  parley_session_close(s);
  parley_engine_close(e);
}

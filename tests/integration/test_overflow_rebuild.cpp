// DROP_OLDEST on a small context over the C API: a turn refused even with every exchange
// dropped leaves a suspended session as it was (spilled, nothing in memory), as ERROR does; a
// turn that fits once older exchanges are dropped rebuilds the conversation, spilled or not,
// into what a new session given the kept conversation holds, a reply prefix or a written reply
// included (tokenized as they open a conversation, not as they followed the dropped reply).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

constexpr uint32_t kContext = 64;

parley_engine* open_small_context(const std::string& model, const std::string& store_path) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model.c_str();
  eo.store_path = store_path.empty() ? nullptr : store_path.c_str();
  eo.context_length = kContext;
  eo.kv_type = PARLEY_KV_F32;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

parley_session* create_session(parley_engine* e, const char* id, const char* system,
                               int32_t overflow) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = id;
  so.system_prompt = system;
  so.chat_template = "raw";
  so.overflow = overflow;
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &so, &s) == PARLEY_OK, parley_last_error());
  return s;
}

int append_text(const char* utf8, size_t len, void* user) {
  static_cast<std::string*>(user)->append(utf8, len);
  return 0;
}

struct Sent {
  parley_status status = PARLEY_OK;
  parley_turn_stats stats{};
  std::string text;  // as streamed
};

Sent send(parley_session* s, const char* message, uint32_t max_tokens,
          const char* reply_prefix = nullptr) {
  parley_generate_options g = greedy_options(max_tokens);
  g.reply_prefix = reply_prefix;
  Sent sent;
  sent.stats.struct_size = sizeof sent.stats;
  sent.status = parley_session_send(s, message, &g, append_text, &sent.text, &sent.stats);
  return sent;
}

// The text of every turn, in order.
std::vector<std::string> turn_texts(parley_session* s) {
  std::vector<std::string> texts;
  for (uint32_t i = 0;; ++i) {
    parley_turn t{};
    t.struct_size = sizeof t;
    if (parley_session_get_turn(s, i, &t) != PARLEY_OK) break;
    texts.emplace_back(t.text);
  }
  return texts;
}

// About 100 tokens: more than the context holds with a reply and the system prompt.
std::string long_message() {
  std::string text;
  for (int i = 0; i < 12; ++i) text += "The cat sat on the mat. ";
  return text;
}

}  // namespace

TEST_CASE("DROP_OLDEST: a turn that cannot fit leaves a suspended session spilled, as ERROR") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  parley_engine* e = open_small_context(gguf.string(), (dir / "s.db").string());
  const std::string big = long_message();
  for (const int32_t policy : {PARLEY_OVERFLOW_ERROR, PARLEY_OVERFLOW_DROP_OLDEST}) {
    CAPTURE(policy);
    const std::string id = "suspended-" + std::to_string(policy);
    parley_session* s = create_session(e, id.c_str(), "Once upon a time", policy);
    REQUIRE(send(s, "there was a cat", 12).status == PARLEY_OK);
    REQUIRE(send(s, "The dog", 12).status == PARLEY_OK);
    const std::vector<int32_t> tokens = session_tokens(s);
    REQUIRE(parley_session_suspend(s) == PARLEY_OK);
    REQUIRE(session_info(s).state == PARLEY_SESSION_SPILLED);

    CHECK(send(s, big.c_str(), 12).status == PARLEY_E_CONTEXT_FULL);
    CHECK(session_info(s).state == PARLEY_SESSION_SPILLED);
    CHECK(session_info(s).kv_bytes_resident == 0);
    REQUIRE(parley_session_suspend(s) == PARLEY_OK);  // whatever the send left in memory
    CHECK(parley_session_add_exchange(s, "Hi", big.c_str()) == PARLEY_E_CONTEXT_FULL);
    CHECK(session_info(s).state == PARLEY_SESSION_SPILLED);
    CHECK(session_info(s).kv_bytes_resident == 0);
    CHECK(session_tokens(s) == tokens);

    // The stored KV is still the conversation's: the next turn that fits restores it.
    const Sent next = send(s, " The end", 4);
    REQUIRE(next.status == PARLEY_OK);
    CHECK(next.stats.kv_source == PARLEY_KV_SOURCE_RESTORED);
    CHECK(next.stats.reused_tokens > 0);
    parley_session_close(s);
  }
  parley_engine_close(e);
}

TEST_CASE("DROP_OLDEST from a suspended session: rebuilt as a new session with what is kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  parley_engine* e = open_small_context(gguf.string(), (dir / "s.db").string());
  const char* system = "Once upon a time";
  // Too long to follow the last exchange: both go, the system prompt stays.
  const char* message = " there was a little girl named Lily. She liked to play in the park.";
  parley_session* s = create_session(e, "dropped", system, PARLEY_OVERFLOW_DROP_OLDEST);
  REQUIRE(send(s, "there was a cat", 12).status == PARLEY_OK);
  REQUIRE(send(s, "The dog", 12).status == PARLEY_OK);
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);
  REQUIRE(session_info(s).state == PARLEY_SESSION_SPILLED);
  const Sent dropped = send(s, message, 28);
  REQUIRE_MESSAGE(dropped.status == PARLEY_OK, parley_last_error());
  CHECK(dropped.stats.kv_source == PARLEY_KV_SOURCE_REBUILT);
  CHECK(dropped.stats.restore_ms == 0);  // the stored KV, of the positions before, is not read
  CHECK(session_info(s).state == PARLEY_SESSION_ACTIVE);
  CHECK(session_info(s).kv_bytes_resident > 0);

  parley_session* fresh = create_session(e, "fresh", system, PARLEY_OVERFLOW_DROP_OLDEST);
  const Sent reference = send(fresh, message, 28);
  REQUIRE(reference.status == PARLEY_OK);
  CHECK(dropped.text == reference.text);
  CHECK(session_tokens(s) == session_tokens(fresh));
  CHECK(turn_texts(s) == turn_texts(fresh));
  CHECK(session_info(s).n_turns == 3);

  // Suspended again, it stores the rebuilt conversation's KV, and goes on as the new one does.
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);
  const Sent after = send(s, " The end", 4);
  REQUIRE(after.status == PARLEY_OK);
  CHECK(after.stats.kv_source == PARLEY_KV_SOURCE_RESTORED);
  REQUIRE(send(fresh, " The end", 4).status == PARLEY_OK);
  CHECK(session_tokens(s) == session_tokens(fresh));
  parley_session_close(fresh);
  parley_session_close(s);
  parley_engine_close(e);
}

// Under "raw" a reply prefix or a written reply after an empty message continues the text
// before it: "and" joins the last word. Once every exchange is dropped, nothing is before it
// but BOS: it starts the text, as in a new session.
TEST_CASE("DROP_OLDEST dropping every exchange: a reply prefix opens the reply as a new one") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_small_context(gguf.string(), "");
  parley_session* s = create_session(e, nullptr, nullptr, PARLEY_OVERFLOW_DROP_OLDEST);
  REQUIRE(send(s, "Once upon a time", 20).status == PARLEY_OK);
  const Sent dropped = send(s, "", 50, "and the dog");
  REQUIRE_MESSAGE(dropped.status == PARLEY_OK, parley_last_error());
  CHECK(dropped.stats.kv_source == PARLEY_KV_SOURCE_REBUILT);

  parley_session* fresh = create_session(e, nullptr, nullptr, PARLEY_OVERFLOW_DROP_OLDEST);
  const Sent reference = send(fresh, "", 50, "and the dog");
  REQUIRE(reference.status == PARLEY_OK);
  CHECK(session_tokens(s) == session_tokens(fresh));
  CHECK(dropped.text == reference.text);
  CHECK(turn_texts(s) == turn_texts(fresh));
  parley_session_close(fresh);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("DROP_OLDEST dropping every exchange: a written reply is encoded as a new one's") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_small_context(gguf.string(), "");
  parley_session* s = create_session(e, nullptr, nullptr, PARLEY_OVERFLOW_DROP_OLDEST);
  // A reply to the context's last free token: the written one does not follow it.
  REQUIRE(send(s, "Once upon a time", kContext - 6).status == PARLEY_OK);
  REQUIRE(session_tokens(s).size() == kContext - 1);
  REQUIRE_MESSAGE(parley_session_add_exchange(s, "", "and the dog") == PARLEY_OK,
                  parley_last_error());
  CHECK(session_info(s).n_turns == 2);

  parley_session* fresh = create_session(e, nullptr, nullptr, PARLEY_OVERFLOW_DROP_OLDEST);
  REQUIRE(parley_session_add_exchange(fresh, "", "and the dog") == PARLEY_OK);
  CHECK(session_tokens(s) == session_tokens(fresh));
  CHECK(turn_texts(s) == turn_texts(fresh));
  // And the next reply is the one the new session gives.
  const Sent next = send(s, "", 8);
  const Sent reference = send(fresh, "", 8);
  REQUIRE(next.status == PARLEY_OK);
  REQUIRE(reference.status == PARLEY_OK);
  CHECK(next.text == reference.text);
  parley_session_close(fresh);
  parley_session_close(s);
  parley_engine_close(e);
}

// Conversation JSON as other tools and hands write it (parley_session_import): keys left out
// mean what parley.h says, whether the messages carry their ids or not; values out of range,
// deep nesting and bytes that are not UTF-8 are refused with one readable line that names
// them, on any thread the host calls from.
#include <doctest/doctest.h>
#include <pthread.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "common/error.h"
#include "engine/conversation_json.h"
#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "text/utf8_stream.h"

using namespace parley;
using namespace parley::test;
using Json = nlohmann::json;

namespace {

// A conversation with a system prompt and two replies cut at max_tokens (so open).
Json exported_conversation(std::shared_ptr<engine::Engine> engine, const std::string& id) {
  auto options = session_options("You tell short stories.", "chatml");
  options.id = id;
  engine::Session s(std::move(engine), options);
  greedy_turn(s, "Tell me about a cat.", 8);
  greedy_turn(s, "And a dog?", 8);
  return Json::parse(s.export_json());
}

Json without_ids(Json j) {
  for (auto& message : j["messages"]) message.erase("tokens");
  j.erase("model_fingerprint");
  return j;
}

// The message read_conversation_json refuses `json` with; "" when it reads it.
std::string refusal(const std::string& json) {
  try {
    engine::read_conversation_json(json);
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    return e.what();
  }
  return "";
}

void check_one_line_of_utf8(const std::string& message) {
  CHECK(text::is_valid_utf8(message));
  CHECK(message.find_first_of("\n\r") == std::string::npos);
}

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

struct ImportResult {
  parley_status status = PARLEY_OK;
  std::string message;
};

struct ImportCall {
  parley_engine* engine;
  const std::string* json;
  ImportResult result;
};

// parley_session_import on a thread with a stack of `stack_bytes`, as a host's worker has.
ImportResult import_on_small_stack(parley_engine* e, const std::string& json, size_t stack_bytes) {
  ImportCall call{e, &json, {}};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, stack_bytes) == 0);
  pthread_t thread;
  const auto body = [](void* arg) -> void* {
    auto* c = static_cast<ImportCall*>(arg);
    parley_session* s = nullptr;
    c->result.status = parley_session_import(c->engine, c->json->c_str(), "deep", &s);
    c->result.message = parley_last_error();
    if (s) parley_session_close(s);
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, body, &call) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return call.result;
}

}  // namespace

TEST_CASE("deep nesting is refused as such, even on a thread with a small stack") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_INT8);
  const std::string head = R"({"format": "parley-conversation", "chat_template": "raw", )";
  const std::string deep = nested_arrays(100000);
  for (const std::string& json :
       {head + R"("version": )" + deep + "}",
        head + R"("version": 1, "messages": [], "extra": )" + deep + "}",
        head + R"("version": 1, "messages": [{"role": "user", "text": "a", "tokens": )" + deep +
            "}]}"}) {
    const ImportResult r = import_on_small_stack(e, json, 256 * 1024);
    CHECK(r.status == PARLEY_E_INVALID_ARGUMENT);
    CHECK_MESSAGE(r.message.find("nested too deep") != std::string::npos, r.message);
  }
  // Nesting a file may have, and a little more, is read.
  const std::string shallow =
      head + R"("version": 1, "messages": [], "extra": )" + nested_arrays(60) + "}";
  const ImportResult r = import_on_small_stack(e, shallow, 256 * 1024);
  CHECK_MESSAGE(r.status == PARLEY_OK, r.message);
  parley_engine_close(e);
}

TEST_CASE("a value that is not a token id: arrays and objects named by kind, never written out") {
  const std::string head =
      R"({"format": "parley-conversation", "version": 1, "chat_template": "raw", )"
      R"("messages": [{"role": "user", "text": "a", "tokens": )";
  CHECK(refusal(head + "[1, [2, [3]]]}]}").find("'messages[0].tokens' holds an array") !=
        std::string::npos);
  CHECK(refusal(head + R"([{"a": 1}]}]})").find("holds an object") != std::string::npos);
  CHECK(refusal(head + R"(["7"]}]})").find("holds \"7\"") != std::string::npos);
  CHECK(refusal(head + "[1.5]}]}").find("holds 1.5") != std::string::npos);
}

TEST_CASE("a reply without \"closed\" is open, with its ids or without them") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  auto options = session_options("You tell short stories.", "chatml");
  options.id = "original";
  engine::Session original(engine, options);
  greedy_turn(original, "Tell me about a cat.", 8);
  greedy_turn(original, "And a dog?", 8);
  Json j = Json::parse(original.export_json());
  for (auto& message : j["messages"]) {
    if (message["role"] == "assistant") {
      REQUIRE(message["closed"] == false);  // cut at max_tokens
      message.erase("closed");
    }
  }
  auto with_ids = engine::Session::import_json(engine, j.dump(), "with-ids");
  auto texts = engine::Session::import_json(engine, without_ids(j).dump(), "texts");
  for (const auto* imported : {with_ids.get(), texts.get()}) {
    for (const auto& m : imported->messages()) {
      if (m.role == engine::Role::assistant) CHECK_FALSE(m.closed);
    }
  }
  // Open as the original's, the ids go on as the original's do.
  greedy_turn(original, "Then what?", 6);
  greedy_turn(*with_ids, "Then what?", 6);
  CHECK(with_ids->tokens() == original.tokens());
}

TEST_CASE("a missing system_prompt is the system message's") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const Json exported = exported_conversation(engine, "original");
  for (const Json& given : {exported, without_ids(exported)}) {
    auto expected = engine::Session::import_json(engine, given.dump(), "expected");
    Json left_out = given;
    left_out.erase("system_prompt");
    auto imported = engine::Session::import_json(engine, left_out.dump(), "left-out");
    REQUIRE(imported->messages().size() == expected->messages().size());
    CHECK(imported->messages()[0].role == engine::Role::system);
    CHECK(imported->messages()[0].text == "You tell short stories.");
    CHECK(imported->tokens() == expected->tokens());
  }
  // Given, it must still be the system message's text.
  Json differs = exported;
  differs["system_prompt"] = "";
  CHECK(refusal(differs.dump()).empty());  // the reader leaves that check to the import
  try {
    engine::Session::import_json(engine, differs.dump(), "differs");
    FAIL("imported");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("differ") != std::string::npos);
  }
  // Given with no system message at all, it is that message that is missing.
  Json no_system = exported;
  no_system["messages"] = Json::array();
  try {
    engine::Session::import_json(engine, no_system.dump(), "no-system");
    FAIL("imported");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find("the system message (messages[0], with the same text) is "
                                     "missing") != std::string::npos);
  }
}

TEST_CASE("created_unix_ms is an integer of 64 bits; a larger one is refused") {
  const std::string head =
      R"({"format": "parley-conversation", "version": 1, "chat_template": "raw", )"
      R"("messages": [], "created_unix_ms": )";
  for (const char* too_large : {"18446744073709551615", "9223372036854775808"}) {
    CAPTURE(too_large);
    CHECK(refusal(head + too_large + "}").find("'created_unix_ms'") != std::string::npos);
  }
  const auto max = std::numeric_limits<int64_t>::max();
  const auto read = engine::read_conversation_json(head + std::to_string(max) + "}");
  CHECK(read.header.created_ms == max);
  CHECK(engine::read_conversation_json(head + "-5}").header.created_ms == -5);
}

TEST_CASE("a refusal is one line of valid UTF-8, whatever bytes the file holds") {
  const std::string head = R"({"format": "parley-conversation", "version": 1, )";
  // The parser quotes what it read: here a byte that is not UTF-8, at the end of a long string.
  const std::string not_utf8 = head + "\"chat_template\": \"" + std::string(100000, 'a') + "\xff";
  const std::string message = refusal(not_utf8);
  CHECK(message.find("not valid JSON") != std::string::npos);
  CHECK(message.find("\\xFF") != std::string::npos);
  CHECK(message.size() < 1000);
  check_one_line_of_utf8(message);
  check_one_line_of_utf8(refusal(head + "\"chat_template\": \"a\x01\"}"));
  // Values named in a message are quoted, their line breaks escaped.
  const std::string role = head + R"("chat_template": "raw", "messages": [{"role": "a\nb"}]})";
  CHECK(refusal(role).find("'messages[0].role'") != std::string::npos);
  check_one_line_of_utf8(refusal(role));
  const std::string overflow = head + R"("chat_template": "raw", "overflow": "a\rb"})";
  CHECK(refusal(overflow).find("'overflow'") != std::string::npos);
  check_one_line_of_utf8(refusal(overflow));
}

TEST_CASE("a parser's refusal keeps what went wrong whole, however long what it read") {
  const std::string head = R"({"format": "parley-conversation", "version": 1, )";
  const std::string lone_surrogate =
      head + "\"chat_template\": \"" + std::string(100000, 'a') + "\\ud800\"}";
  const std::string message = refusal(lone_surrogate);
  CAPTURE(message);
  CHECK(message.find("invalid string: surrogate U+D800..U+DBFF must be followed by "
                     "U+DC00..U+DFFF") != std::string::npos);
  CHECK(message.find("\\ud800") != std::string::npos);  // where the parser stopped
  CHECK(message.size() < 1000);
  check_one_line_of_utf8(message);
}

TEST_CASE("a key given twice in one object is refused, naming it and where it is") {
  const std::string head = R"({"format": "parley-conversation", "version": 1, )";
  const std::string exchange =
      R"([{"role": "user", "text": "Once"}, {"role": "assistant", "text": " upon"}])";
  struct Case {
    std::string json;
    const char* named;
  };
  const Case cases[] = {
      {head + R"("chat_template": "raw", "messages": )" + exchange + R"(, "messages": []})",
       "'messages' appears twice"},
      {R"({"format": "parley-conversation", "version": 7, "version": 1, )"
       R"("chat_template": "raw", "messages": []})",
       "'version' appears twice"},
      {head + R"("chat_template": "raw", "messages": [{"role": "user", "text": "a"}, )"
              R"({"role": "assistant", "text": "b"}, {"role": "user", "text": "c", "text": "d"}]})",
       "'messages[2].text' appears twice"},
      {head + R"("chat_template": "raw", "messages": [], "extra": [1, {"k": {"x": 1, "x": 2}}]})",
       "'extra[1].k.x' appears twice"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.json);
    CHECK(refusal(c.json).find(c.named) != std::string::npos);
  }
  // The same key in different objects is no repeat; nesting is still limited.
  const auto read = engine::read_conversation_json(
      head + R"("chat_template": "raw", "messages": )" + exchange + "}");
  REQUIRE(read.turns.size() == 2);
  CHECK(read.turns[1].text == " upon");
  CHECK(refusal(head + R"("chat_template": "raw", "messages": [], "x": )" + nested_arrays(64) +
                "}")
            .find("nested too deep") != std::string::npos);
}

TEST_CASE("C ABI: parley_last_error after a refused import is one line of valid UTF-8") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_INT8);
  for (const char* json : {"{\"format\": \"\xff\"}", "{\"format\": \"a\x1b[2J\"}",
                           R"({"format": "parley-conversation", "version": 1, )"
                           R"("chat_template": "chat\nml", "messages": []})"}) {
    CAPTURE(json);
    parley_session* s = nullptr;
    CHECK(parley_session_import(e, json, "x", &s) == PARLEY_E_INVALID_ARGUMENT);
    check_one_line_of_utf8(parley_last_error());
  }
  parley_engine_close(e);
}

TEST_CASE("created_unix_ms is kept, with the messages' ids or from their texts") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  Json j = exported_conversation(engine, "original");
  j["created_unix_ms"] = 1500000000000;
  auto with_ids = engine::Session::import_json(engine, j.dump(), "with-ids");
  auto texts = engine::Session::import_json(engine, without_ids(j).dump(), "texts");
  for (const auto* imported : {with_ids.get(), texts.get()}) {
    CHECK(Json::parse(imported->export_json())["created_unix_ms"] == 1500000000000);
  }
}

// Replies held to a JSON Schema (json_schema with PARLEY_FORMAT_JSON) on stories260K through
// the C ABI: each whole reply parses (nlohmann::json) and has the keys, order, types and
// values the schema asks; cut replies go on under it; bad schemas and starts are refused by
// name with the conversation left as it was; callers built against 0.11 are not read past
// their struct.
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "json_replies.h"
#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

using Json = nlohmann::ordered_json;

const char* const kCharacter = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "mood": {"enum": ["happy", "sad", "angry"]},
    "level": {"type": "integer"},
    "alive": {"type": "boolean"},
    "pos": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"]},
    "friends": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
  },
  "required": ["name", "mood", "level", "alive", "pos"]
})";

parley_generate_options schema_options(uint32_t max_tokens, const char* schema) {
  parley_generate_options g = greedy_options(max_tokens);
  g.ignore_eos = 0;
  g.format = PARLEY_FORMAT_JSON;
  g.json_schema = schema;
  return g;
}

// Biases the tokens that show one of `texts` alone: the story model writes strings and digits
// on and on, and seldom ends them of its own accord.
std::vector<parley_logit_bias> ending_bias(parley_engine* e, std::set<std::string> texts,
                                           float bias) {
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  std::vector<parley_logit_bias> biases;
  for (int32_t id = 0; id < int32_t(info.n_vocab); ++id) {
    char buf[64];
    size_t needed = 0;
    if (parley_detokenize(e, &id, 1, buf, sizeof buf, &needed) != PARLEY_OK) continue;
    if (texts.count(std::string(buf, needed - 1))) biases.push_back({id, bias});
  }
  REQUIRE(biases.size() >= texts.size());
  return biases;
}

// The story model pads JSON with all the whitespace the format allows between tokens (32
// bytes at a time), and writes strings and digits on and on: `ending_bias` on the tokens that
// show `"`, `,` or `}` alone, and bans on those that show whitespace alone (a token's text
// after "a", as U+2581 alone shows nothing), let it reach the object's end.
std::vector<parley_logit_bias> nudged_to_end(parley_engine* e) {
  std::vector<parley_logit_bias> biases = ending_bias(e, {"\"", ","}, 8.0f);
  // "}" most: the model has all but never seen it.
  for (const parley_logit_bias& b : ending_bias(e, {"}"}, 26.0f)) biases.push_back(b);
  int32_t a = 0;
  size_t n = 0;
  REQUIRE(parley_tokenize(e, "a", 0, &a, 1, &n) == PARLEY_OK);
  REQUIRE(n == 1);
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  size_t banned = 0;
  for (int32_t id = 0; id < int32_t(info.n_vocab); ++id) {
    const int32_t pair[2] = {a, id};
    char buf[64];
    size_t needed = 0;
    if (parley_detokenize(e, pair, 2, buf, sizeof buf, &needed) != PARLEY_OK) continue;
    const std::string shown(buf + 1, needed - 2);  // after the "a"
    if (!shown.empty() && shown.find_first_not_of(" \t\n") == std::string::npos) {
      biases.push_back({id, -std::numeric_limits<float>::infinity()});
      ++banned;
    }
  }
  REQUIRE(banned >= 3);
  return biases;
}

// What kCharacter asks, checked on the parsed reply.
void check_character(const Json& j) {
  REQUIRE(j.is_object());
  const std::vector<std::string> order = {"name", "mood",    "level", "alive",
                                          "pos",  "friends", "note"};
  size_t at = 0;
  for (const auto& [key, value] : j.items()) {
    const auto listed = std::find(order.begin() + long(at), order.end(), key);
    REQUIRE_MESSAGE(listed != order.end(), key);  // listed, and after the one before
    at = size_t(listed - order.begin()) + 1;
  }
  for (const char* key : {"name", "mood", "level", "alive", "pos"}) CHECK(j.contains(key));
  CHECK(j["name"].is_string());
  CHECK((j["mood"] == "happy" || j["mood"] == "sad" || j["mood"] == "angry"));
  CHECK(j["level"].is_number_integer());
  CHECK(j["alive"].is_boolean());
  CHECK(j["pos"].size() == 2);
  CHECK(j["pos"]["x"].is_number());
  CHECK(j["pos"]["y"].is_number());
  if (j.contains("friends")) {
    CHECK(j["friends"].is_array());
    CHECK(j["friends"].size() <= 2);
    for (const Json& f : j["friends"]) CHECK(f.is_string());
  }
  if (j.contains("note")) CHECK((j["note"].is_string() || j["note"].is_null()));
}

}  // namespace

TEST_CASE("sampled replies held to a schema have its keys, order, types and values") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_INT8);
  const std::vector<parley_logit_bias> ending = nudged_to_end(e);
  int whole = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    CAPTURE(seed);
    parley_session* s = create_raw_session(e, nullptr);
    parley_generate_options g = schema_options(300, kCharacter);
    g.temperature = 1.0f;
    g.seed = seed;
    g.logit_bias = ending.data();
    g.n_logit_bias = uint32_t(ending.size());
    const Reply r = send(s, "Once upon a time", g);
    REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
    const std::string kept = turn_text(s, 1);
    CAPTURE(kept);
    CHECK(r.streamed == kept);
    if (r.stats.stop_reason == PARLEY_STOP_FORMAT_END) {
      ++whole;
      check_character(Json::parse(kept));
    } else {
      CHECK(r.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
    }
    parley_session_close(s);
  }
  CHECK(whole >= 12);
  parley_engine_close(e);
}

TEST_CASE("a reply cut short goes on under its schema with parley_session_continue") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);
  const std::vector<parley_logit_bias> ending = nudged_to_end(e);
  parley_generate_options g = schema_options(6, kCharacter);
  g.reply_prefix = "{\"name\": \"";
  const Reply r = send(s, "Once upon a time", g);
  REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  REQUIRE(r.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
  parley_generate_options more = schema_options(20, kCharacter);
  more.temperature = 1.0f;
  more.logit_bias = ending.data();
  more.n_logit_bias = uint32_t(ending.size());
  const Continued continued = continue_until_closed(s, more, 30);
  const std::string whole = r.streamed + continued.text;
  CAPTURE(whole);
  REQUIRE(continued.closed);
  CHECK(turn_text(s, 1) == whole);
  check_character(Json::parse(whole));
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a greedy reply under a schema of fixed values is those values") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);
  const char* schema = R"({"properties": {"kind": {"const": "quest"}, "done": {"const": false},
      "steps": {"type": "array", "items": {"enum": [1, 2]}, "minItems": 2, "maxItems": 2}},
      "required": ["kind", "done", "steps"], "additionalProperties": false})";
  parley_generate_options g = schema_options(100, schema);
  const std::vector<parley_logit_bias> ending = nudged_to_end(e);
  g.logit_bias = ending.data();
  g.n_logit_bias = uint32_t(ending.size());
  const Reply r = send(s, "Once upon a time", g);
  REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  CHECK(r.stats.stop_reason == PARLEY_STOP_FORMAT_END);
  CAPTURE(r.streamed);
  const Json j = Json::parse(r.streamed);
  CHECK(j.size() == 3);
  CHECK(j["kind"] == "quest");
  CHECK(j["done"] == false);
  REQUIRE(j["steps"].size() == 2);
  for (const Json& step : j["steps"]) CHECK((step == 1 || step == 2));
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("bad schemas and starts are refused by name, and the conversation stays as it was") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);
  const auto error = [] { return std::string(parley_last_error()); };

  parley_generate_options text = schema_options(10, kCharacter);
  text.format = PARLEY_FORMAT_TEXT;
  CHECK(send(s, "Once", text).status == PARLEY_E_INVALID_ARGUMENT);
  CHECK(error().find("json_schema is set but format is PARLEY_FORMAT_TEXT") != std::string::npos);

  CHECK(send(s, "Once", schema_options(10, "{\"type\": ")).status == PARLEY_E_INVALID_ARGUMENT);
  CHECK(error().find("json_schema is not JSON") != std::string::npos);

  CHECK(send(s, "Once", schema_options(10, R"({"properties":{"n":{"type":"string",
        "maxLength":8}}})")).status == PARLEY_E_UNSUPPORTED);
  CHECK(error().find("json_schema at \"/properties/n\": \"maxLength\" (string lengths) is not "
                     "supported") != std::string::npos);

  CHECK(send(s, "Once", schema_options(10, R"({"type":"array"})")).status ==
        PARLEY_E_INVALID_ARGUMENT);
  CHECK(error().find("no object satisfies the schema") != std::string::npos);

  parley_generate_options wrong_start = schema_options(10, kCharacter);
  wrong_start.reply_prefix = "{\"mood\"";
  CHECK(send(s, "Once", wrong_start).status == PARLEY_E_INVALID_ARGUMENT);
  CHECK(error().ends_with("reply_prefix is not the start of a JSON object that json_schema "
                          "accepts, which format JSON asks the reply to be: its byte 3 of 7 "
                          "cannot come there"));
  CHECK(session_info(s).n_turns == 0);

  // A reply begun without the schema cannot go on under one it breaks.
  parley_generate_options any_object = schema_options(2, nullptr);
  any_object.reply_prefix = "{\"a";
  REQUIRE(send(s, "Once upon a time", any_object).status == PARLEY_OK);
  const std::vector<int32_t> before = session_tokens(s);
  parley_generate_options more = schema_options(10, R"({"required":["zzz"],
      "properties":{"zzz":{}}})");
  CHECK(parley_session_continue(s, &more, nullptr, nullptr, nullptr) ==
        PARLEY_E_INVALID_ARGUMENT);
  CHECK(error().find("the reply so far is not the start of a JSON object that json_schema "
                     "accepts") != std::string::npos);
  CHECK(session_tokens(s) == before);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("an empty schema is none, and a caller of 0.11 is not read past its struct") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  std::string replies[3];
  for (int i = 0; i < 3; ++i) {
    parley_session* s = create_raw_session(e, nullptr);
    parley_generate_options g = schema_options(40, i == 0 ? nullptr : "");
    if (i == 2) {
      // As a program built against 0.11 fills it: the field is past its struct_size.
      g.struct_size = offsetof(parley_generate_options, json_schema);
      g.json_schema = reinterpret_cast<const char*>(uintptr_t{1});
    }
    const Reply r = send(s, "Once upon a time", g);
    REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
    replies[i] = r.streamed;
    parley_session_close(s);
  }
  CHECK(!replies[0].empty());
  CHECK(replies[1] == replies[0]);
  CHECK(replies[2] == replies[0]);
  parley_engine_close(e);
}

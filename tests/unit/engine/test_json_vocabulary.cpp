// JsonVocabulary: the tokens allowed next in a JSON reply, found by one walk over the sorted
// vocabulary, are exactly those SchemaPrefix takes when each token is fed on its own (without
// a schema: JsonPrefix's), for the Llama 2 and the stories260K tokenizers in many states along
// random JSON replies, with and without a JSON Schema.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/json_vocabulary.h"
#include "model/tokenizer_source.h"
#include "support/shared_assets.h"
#include "text/json_prefix.h"
#include "text/json_schema.h"
#include "text/schema_prefix.h"
#include "text/tokenizer.h"

namespace parley::engine {
namespace {

std::vector<uint8_t> allowed_one_by_one(const text::Tokenizer& tokenizer,
                                        const text::SchemaPrefix& state) {
  std::vector<uint8_t> allowed(size_t(tokenizer.n_vocab()), 0);
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (tokenizer.is_control(id) || tokenizer.is_unknown(id)) continue;
    const std::string bytes = tokenizer.piece_bytes(id);
    text::SchemaPrefix p = state;
    allowed[size_t(id)] = !bytes.empty() && p.feed(bytes);
  }
  return allowed;
}

// Replies so far in every kind of state: strings of keys and of values in objects and arrays
// (a closing quote allows different tokens after it), escapes, characters and \u escapes
// under way, numbers, literals, whitespace near its limits, the nesting limit.
std::vector<std::string> chosen_states() {
  std::vector<std::string> texts = {
      "", " ", "{", "{\"", "{\"key", "{\"a\"", "{\"a\":", "{\"a\": \"", "{\"a\": \"x",
      "{\"a\": [\"x", "{\"a\": [[\"x", "{\"a\": {\"b\": \"x", "{\"a\": \"\\", "{\"a\": \"\\u",
      "{\"a\": \"\\u00", "{\"a\": \"\\ud83d", "{\"a\": \"\\ud83d\\", "{\"a\": \"\\ud83d\\ude",
      "{\"a\": \"\xe2", "{\"a\": \"\xe2\x82", "{\"a\": \"\xf0", "{\"a\": \"\xed", "{\"a\": -",
      "{\"a\": 0", "{\"a\": 12", "{\"a\": 1.", "{\"a\": 1.5", "{\"a\": 1e", "{\"a\": 1e+",
      "{\"a\": [1", "{\"a\": t", "{\"a\": fal", "{\"a\": nul", "{\"a\": null", "{\"a\": [",
      "{\"a\": [1,", "{\"a\": []", "{\"a\": {}", "{\"a\": 1,", "{\"a\": 1 ",
      "{\"a\": 1\n", "{\"a\": 1\t", "{" + std::string(31, ' '), "{\n" + std::string(20, '\t'),
  };
  std::string deep = "{\"a\":";
  for (int i = 1; i < text::JsonPrefix::kMaxDepth; ++i) deep += '[';
  texts.push_back(deep);
  return texts;
}

text::Tokenizer tokenizer_of_file(const std::filesystem::path& model_file) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::sentencepiece_proto;
  source.proto_bytes = test::read_file(model_file);
  return text::Tokenizer(source);
}

// A GGUF-style vocabulary: <unk>, <s>, </s>, the 256 byte pieces, then `pieces`.
model::TokenizerSource synthetic_source(const std::vector<std::string>& pieces) {
  model::GgufVocab v;
  v.model = "llama";
  const auto add = [&](const std::string& piece, int32_t type) {
    v.tokens.push_back(piece);
    v.token_types.push_back(type);
    v.scores.push_back(-float(v.tokens.size()));
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 6);
  for (const std::string& piece : pieces) add(piece, 1);
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::gguf_vocab;
  source.vocab = std::move(v);
  return source;
}

// Keys and enum values spelled out (where tokens of plain text are not all allowed inside a
// string), strings left free, an integer, a choice, an array of objects.
const char* const kSchema = R"({"properties": {
    "name": {"type": "string"}, "mood": {"enum": ["happy", "sad", "x\"y", "\u00e9t\u00e9"]},
    "level": {"type": "integer"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"const": 7},
              "tags": {"type": "object", "additionalProperties": {"type": "boolean"}}}}}},
    "required": ["name", "mood"]})";

std::vector<std::string> chosen_schema_states() {
  return {"",
          "{",
          "{\"",
          "{\"na",
          "{\"name\": \"",
          "{\"name\": \"x",
          "{\"name\": \"x\"",
          "{\"name\": \"x\", \"mood\": \"",
          "{\"name\": \"x\", \"mood\": \"x",
          "{\"name\": \"x\", \"mood\": \"\xc3",
          "{\"name\": \"x\", \"mood\": \"sad\",",
          "{\"name\": \"x\", \"mood\": \"sad\", \"level\": 1",
          "{\"name\": \"x\", \"mood\": \"sad\", \"note\": ",
          "{\"name\": \"x\", \"mood\": \"sad\", \"items\": [",
          "{\"name\": \"x\", \"mood\": \"sad\", \"items\": [{\"id\": 7, \"tags\": {\"",
          "{\"name\": \"x\", \"mood\": \"sad\", \"items\": [{\"id\": 7, \"tags\": {\"a\":"};
}

void check_tokenizer(const text::Tokenizer& tokenizer, int walks, uint32_t seed,
                     const text::JsonSchema* schema = nullptr) {
  const JsonVocabulary vocabulary(tokenizer);
  std::vector<uint8_t> chosen(size_t(tokenizer.n_vocab()));
  for (const std::string& text : schema ? chosen_schema_states() : chosen_states()) {
    CAPTURE(text);
    text::SchemaPrefix state(schema);
    REQUIRE(state.feed(text));
    vocabulary.allowed(state, chosen);
    CHECK(chosen == allowed_one_by_one(tokenizer, state));
  }
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    const bool left_out = tokenizer.is_control(id) || tokenizer.is_unknown(id);
    CHECK(vocabulary.bytes(id) == (left_out ? std::string() : tokenizer.piece_bytes(id)));
  }
  std::mt19937 rng(seed);
  std::vector<uint8_t> allowed(size_t(tokenizer.n_vocab()));
  int states = 0;
  for (int walk = 0; walk < walks; ++walk) {
    text::SchemaPrefix state(schema);
    std::string text;
    for (int step = 0; step < 40 && !state.complete(); ++step) {
      vocabulary.allowed(state, allowed);
      CAPTURE(text);
      REQUIRE(allowed == allowed_one_by_one(tokenizer, state));
      ++states;
      std::vector<int32_t> ids;
      for (size_t id = 0; id < allowed.size(); ++id) {
        if (allowed[id]) ids.push_back(int32_t(id));
      }
      REQUIRE_FALSE(ids.empty());
      // Half the steps take a one-byte token, so that walks also reach numbers, escapes and
      // closing brackets, which long pieces seldom are.
      std::vector<int32_t> short_ids;
      for (const int32_t id : ids) {
        if (vocabulary.bytes(id).size() == 1) short_ids.push_back(id);
      }
      const auto& pool = !short_ids.empty() && rng() % 2 ? short_ids : ids;
      const int32_t id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
      REQUIRE(state.feed(vocabulary.bytes(id)));
      text += vocabulary.bytes(id);
    }
  }
  CHECK(states > walks * 10);
}

TEST_CASE("the Llama 2 vocabulary: one walk allows exactly what token-by-token feeding does") {
  PARLEY_SHARED_OR_SKIP(model, "tokenizers/llama2/tokenizer.model");
  check_tokenizer(tokenizer_of_file(model), 8, 11);
  check_tokenizer(tokenizer_of_file(model), 4, 21, text::JsonSchema::compile(kSchema).get());
}

TEST_CASE("the stories260K vocabulary: one walk allows exactly what token-by-token feeding does") {
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/hf/tokenizer.model");
  check_tokenizer(tokenizer_of_file(model), 200, 12);
  check_tokenizer(tokenizer_of_file(model), 100, 22, text::JsonSchema::compile(kSchema).get());
}

TEST_CASE("tokens of JSON's own punctuation: one walk allows exactly what feeding each does") {
  // Pieces that end a string and start another: from a key string they come back to a key
  // string, from a value string they do not; and escapes, closers, U+2581 spaces.
  const text::Tokenizer tokenizer(synthetic_source(
      {"\":0,\"", "\":{},\"", "\": \"\", \"", "\":[\"", "\\\"", "\\\",", "\\n", "\\u00", "\"}",
       "\"]", "\",", "\":", "a", "\xE2\x96\x81" "a", "\xE2\x96\x81\"", "}", "]", "{\"", "[\"", "1,",
       "\xE2\x96\x81{", "true", "\xC3\xA9", "\xE2\x82"}));
  check_tokenizer(tokenizer, 300, 13);
  check_tokenizer(tokenizer, 150, 23, text::JsonSchema::compile(kSchema).get());
}

}  // namespace
}  // namespace parley::engine

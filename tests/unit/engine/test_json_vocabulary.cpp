// JsonVocabulary: the tokens allowed next in a JSON reply, found by one walk over the sorted
// vocabulary, are exactly those JsonPrefix takes when each token is fed on its own, for the
// Llama 2 and the stories260K tokenizers in many states along random JSON replies.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/json_vocabulary.h"
#include "model/tokenizer_source.h"
#include "support/shared_assets.h"
#include "text/json_prefix.h"
#include "text/tokenizer.h"

namespace parley::engine {
namespace {

std::vector<uint8_t> allowed_one_by_one(const text::Tokenizer& tokenizer,
                                        const text::JsonPrefix& state) {
  std::vector<uint8_t> allowed(size_t(tokenizer.n_vocab()), 0);
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (tokenizer.is_control(id) || tokenizer.is_unknown(id)) continue;
    const std::string bytes = tokenizer.piece_bytes(id);
    text::JsonPrefix p = state;
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
      "{\"a\": 1\n", "{\"a\": 1\r", "{" + std::string(31, ' '), "{\n" + std::string(20, '\t'),
  };
  std::string deep = "{\"a\":";
  for (int i = 1; i < text::JsonPrefix::kMaxDepth; ++i) deep += '[';
  texts.push_back(deep);
  return texts;
}

void check_tokenizer(const std::filesystem::path& model_file, int walks, uint32_t seed) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::sentencepiece_proto;
  source.proto_bytes = test::read_file(model_file);
  const text::Tokenizer tokenizer(source);
  const JsonVocabulary vocabulary(tokenizer);
  std::vector<uint8_t> chosen(size_t(tokenizer.n_vocab()));
  for (const std::string& text : chosen_states()) {
    CAPTURE(text);
    text::JsonPrefix state;
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
    text::JsonPrefix state;
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
  check_tokenizer(model, 8, 11);
}

TEST_CASE("the stories260K vocabulary: one walk allows exactly what token-by-token feeding does") {
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/hf/tokenizer.model");
  check_tokenizer(model, 200, 12);
}

}  // namespace
}  // namespace parley::engine

// A Hugging Face tokenizer.model with the tokens its directory adds (a ChatML fine-tune's
// <|im_end|> and <|im_start|>) and padding up to the model's rows: the ids line up with the
// embedding, and the chat markers behave as a GGUF vocabulary's do.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "support/error_check.h"
#include "text/chat_template.h"
#include "text/spm_model_proto.h"
#include "text/tokenizer.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

// <unk> <s> </s> ▁ a b: the tokenizer.model's own pieces.
constexpr int32_t kOwn = 6;
constexpr int32_t kImEnd = 6, kImStart = 7, kTool = 8;

model::TokenizerSource chatml_source(int32_t pad_to = 0) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::sentencepiece_proto;
  source.proto_bytes = build_spm_model_proto(test::small_vocab({"\xE2\x96\x81", "a", "b"}));
  source.added.tokens = {{1, "<s>", true},
                         {kImEnd, "<|im_end|>", true},
                         {kImStart, "<|im_start|>", true},
                         {kTool, "tool", false}};
  source.added.tokens_file = "tokenizer_config.json";
  source.added.pad_to = pad_to;
  source.added.pad_to_source = "config.json: vocab_size";
  return source;
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

TEST_CASE("added tokens follow the tokenizer.model's pieces: special CONTROL, others matched") {
  const Tokenizer tokenizer(chatml_source(kTool + 1));
  CHECK(tokenizer.n_vocab() == kTool + 1);
  CHECK(tokenizer.find_special("<|im_end|>") == kImEnd);
  CHECK(tokenizer.find_special("<|im_start|>") == kImStart);
  CHECK(tokenizer.is_control(kImEnd));
  CHECK(tokenizer.is_control(kImStart));
  CHECK_FALSE(tokenizer.is_control(kTool));
  // Control tokens are never produced from text; a user-defined one is, as transformers does.
  const std::vector<int32_t> typed = tokenizer.encode("a<|im_end|>b<|im_start|>");
  INFO(test::ids_text(typed));
  CHECK_FALSE(contains(typed, kImEnd));
  CHECK_FALSE(contains(typed, kImStart));
  CHECK(contains(tokenizer.encode("a tool b"), kTool));
  CHECK(tokenizer.piece_bytes(kImEnd).empty());
  CHECK(tokenizer.decode(std::vector<int32_t>{4, kImEnd, 5}) == "ab");
}

TEST_CASE("the chatml template ends replies with the added <|im_end|>") {
  auto source = chatml_source();
  source.eos = model::NamedTokenId{kImEnd, "config.json: eos_token_id"};
  const Tokenizer tokenizer(source);
  CHECK(tokenizer.eos_id() == kImEnd);
  const ChatTemplate chatml(TemplateKind::chatml, tokenizer);
  CHECK(chatml.end_reply({}) == std::vector<int32_t>{kImEnd});
  CHECK(chatml.close_reply({}) == std::vector<int32_t>{kImEnd});
  CHECK(contains(chatml.stop_tokens(), kImEnd));
  const std::vector<int32_t> turn = chatml.render_user_turn("", "a", true);
  CHECK(contains(turn, kImStart));
  CHECK(contains(turn, kImEnd));
}

TEST_CASE("pieces are padded with UNUSED ones up to the model's rows, never text") {
  auto source = chatml_source(kTool + 4);
  // A piece that takes the first padding name: the padding takes another (a name twice would
  // stop sentencepiece loading).
  source.added.tokens.push_back({kTool + 1, "<|pad_10|>", true});
  const Tokenizer tokenizer(source);
  CHECK(tokenizer.n_vocab() == kTool + 4);
  // No file gives a padding row text: sampled, it shows nothing, and text never gives it.
  for (const int32_t pad : {kTool + 2, kTool + 3}) {
    CAPTURE(pad);
    CHECK(tokenizer.piece_bytes(pad).empty());
    CHECK_FALSE(tokenizer.is_control(pad));
  }
  const std::vector<int32_t> hello = tokenizer.encode("Hello world");
  REQUIRE(hello.size() >= 2);
  std::vector<int32_t> with_padding = {hello[0], kTool + 3};
  for (size_t i = 1; i < hello.size(); ++i) with_padding.push_back(hello[i]);
  CHECK(tokenizer.decode(with_padding) == tokenizer.decode(hello));
  CHECK_FALSE(tokenizer.find_special("<|pad_11|>").has_value());
  CHECK_FALSE(contains(tokenizer.encode("<|pad_11|>"), kTool + 3));
  CHECK_FALSE(contains(tokenizer.encode("<|pad_10_|>"), kTool + 2));
}

TEST_CASE("added tokens that do not fit the tokenizer.model are bad_model naming both") {
  SUBCASE("an id inside the pieces with another text") {
    auto source = chatml_source();
    source.added.tokens.push_back({4, "<|im_sep|>", true});
    CHECK_PARLEY_ERROR(Tokenizer(source), Status::bad_model,
                       "tokenizer_config.json: added token 4 '<|im_sep|>' is not "
                       "tokenizer.model's piece 4 'a'");
  }
  SUBCASE("a gap after the pieces") {
    auto source = chatml_source();
    source.added.tokens.erase(source.added.tokens.begin() + 1);  // no id 6
    CHECK_PARLEY_ERROR(Tokenizer(source), Status::bad_model,
                       "tokenizer_config.json: added token 7 '<|im_start|>' leaves a gap",
                       "tokenizer.model's 6 pieces", "the next is 6");
  }
  SUBCASE("one id twice") {
    auto source = chatml_source();
    source.added.tokens.insert(source.added.tokens.begin() + 2, {kImEnd, "<|im_sep|>", true});
    CHECK_PARLEY_ERROR(Tokenizer(source), Status::bad_model,
                       "added token 6 '<|im_sep|>' has the id of another added token");
  }
  SUBCASE("a text that is a piece already") {
    auto source = chatml_source();
    source.added.tokens.push_back({kTool + 1, "a", false});
    CHECK_PARLEY_ERROR(Tokenizer(source), Status::bad_model,
                       "tokenizer_config.json: added token 9 'a' is already piece 4");
  }
  SUBCASE("more pieces than the model has rows") {
    CHECK_PARLEY_ERROR(Tokenizer(chatml_source(kTool)), Status::bad_model,
                       "config.json: vocab_size 8 is less than the 9 tokens of tokenizer.model "
                       "(6 pieces) and its added tokens (3, from tokenizer_config.json)");
  }
}

TEST_CASE("an end id outside the vocabulary names the tokenizer's count and its origin") {
  auto source = chatml_source(kTool + 3);
  source.more_end_ids = {{kTool + 3, "generation_config.json: eos_token_id"}};
  CHECK_PARLEY_ERROR(Tokenizer(source), Status::bad_model,
                     "generation_config.json: eos_token_id 11 is outside the vocabulary [0, 11): "
                     "the tokenizer has 11 pieces (tokenizer.model: 6 pieces + 3 added tokens "
                     "(tokenizer_config.json) + 2 padding pieces (up to config.json: "
                     "vocab_size))");
  auto plain = chatml_source();
  plain.added = {};
  plain.eos = model::NamedTokenId{kOwn, "config.json: eos_token_id"};
  CHECK_PARLEY_ERROR(Tokenizer(plain), Status::bad_model,
                     "config.json: eos_token_id 6 is outside the vocabulary [0, 6): the "
                     "tokenizer has 6 pieces (tokenizer.model: 6 pieces)");
}

}  // namespace parley::text

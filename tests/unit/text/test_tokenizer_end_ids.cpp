// The BOS, EOS and further end ids that a model's files name besides its vocabulary
// (config.json, generation_config.json, GGUF end-of-turn keys): taken over the vocabulary's
// own, checked to be control pieces, and ending replies in every chat template.
#include <doctest/doctest.h>

#include <algorithm>

#include "common/error.h"
#include "support/error_check.h"
#include "text/chat_template.h"
#include "text/spm_model_proto.h"
#include "text/tokenizer.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

// Ids of the vocabulary below.
constexpr int32_t kUnk = 0, kBos = 1, kEos = 2, kA = 4, kImStart = 6, kImEnd = 7, kEot = 8;

// <unk> <s> </s> ▁ a b, ChatML's markers typed user-defined (as some converters write
// them; they load as control pieces), and a control end-of-turn piece.
model::GgufVocab vocab() {
  auto v = test::small_vocab({"\xE2\x96\x81", "a", "b"});
  test::append_pieces(v, {"<|im_start|>", "<|im_end|>"}, 4);
  test::append_pieces(v, {"<|eot_id|>"}, 3);
  return v;
}

// A tokenizer.model of vocab(), whose own BOS and EOS are <s> and </s>.
model::TokenizerSource hf_source() {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::sentencepiece_proto;
  source.proto_bytes = build_spm_model_proto(vocab());
  return source;
}

model::NamedTokenId config_eos(int32_t id) { return {id, "config.json: eos_token_id"}; }
model::NamedTokenId generation_eos(int32_t id) {
  return {id, "generation_config.json: eos_token_id"};
}

}  // namespace

TEST_CASE("config.json's BOS and EOS replace the tokenizer.model's own") {
  const Tokenizer own(hf_source());
  CHECK(own.bos_id() == kBos);
  CHECK(own.eos_id() == kEos);
  CHECK(own.end_ids() == std::vector<int32_t>{kEos});

  auto source = hf_source();
  source.eos = config_eos(kImEnd);
  source.bos = model::NamedTokenId{kImStart, "config.json: bos_token_id"};
  const Tokenizer configured(source);
  CHECK(configured.eos_id() == kImEnd);
  CHECK(configured.bos_id() == kImStart);
  CHECK(configured.end_ids() == std::vector<int32_t>{kImEnd});
}

TEST_CASE("every end id the files name ends a reply, the EOS first, each once") {
  auto source = hf_source();
  source.eos = config_eos(kImEnd);
  source.more_end_ids = {config_eos(kEos), generation_eos(kEot), generation_eos(kImEnd)};
  const Tokenizer tokenizer(source);
  CHECK(tokenizer.eos_id() == kImEnd);
  CHECK(tokenizer.end_ids() == std::vector<int32_t>{kImEnd, kEos, kEot});

  auto gguf = test::vocab_source(vocab());
  gguf.more_end_ids = {{kEot, "tokenizer.ggml.eot_token_id"},
                       {kImEnd, "tokenizer.ggml.eom_token_id"}};
  const Tokenizer from_gguf(gguf);
  CHECK(from_gguf.eos_id() == kEos);
  CHECK(from_gguf.end_ids() == std::vector<int32_t>{kEos, kEot, kImEnd});
}

TEST_CASE("a named special id outside the vocabulary or not a control piece is bad_model") {
  const int32_t n = int32_t(vocab().tokens.size());
  const auto with_eos = [](int32_t id) {
    auto source = hf_source();
    source.eos = config_eos(id);
    return source;
  };
  CHECK_PARLEY_ERROR(Tokenizer(with_eos(n)), Status::bad_model,
                     "config.json: eos_token_id " + std::to_string(n) +
                         " is outside the vocabulary [0, " + std::to_string(n) + ")");
  CHECK_PARLEY_ERROR(Tokenizer(with_eos(-1)), Status::bad_model, "config.json: eos_token_id -1",
                     "outside the vocabulary");
  CHECK_PARLEY_ERROR(Tokenizer(with_eos(kA)), Status::bad_model,
                     "config.json: eos_token_id names token 4 ('a') of type NORMAL; it must be "
                     "CONTROL");

  auto bos = hf_source();
  bos.bos = model::NamedTokenId{kUnk, "config.json: bos_token_id"};
  CHECK_PARLEY_ERROR(Tokenizer(bos), Status::bad_model, "config.json: bos_token_id",
                     "token 0 ('<unk>') of type UNKNOWN");

  auto more = hf_source();
  more.more_end_ids = {generation_eos(kEot), generation_eos(3)};
  CHECK_PARLEY_ERROR(Tokenizer(more), Status::bad_model, "generation_config.json: eos_token_id",
                     "token 3 ('\xE2\x96\x81')", "NORMAL");

  auto gguf = test::vocab_source(vocab());
  gguf.more_end_ids = {{kA, "tokenizer.ggml.eot_token_id"}};
  CHECK_PARLEY_ERROR(Tokenizer(gguf), Status::bad_model, "tokenizer.ggml.eot_token_id",
                     "token 4 ('a')", "NORMAL");
  gguf.more_end_ids = {{n + 5, "tokenizer.ggml.eom_token_id"}};
  CHECK_PARLEY_ERROR(Tokenizer(gguf), Status::bad_model, "tokenizer.ggml.eom_token_id",
                     "outside the vocabulary");
}

// What a space after a word adds to its ids.
std::vector<int32_t> space_after_word(const Tokenizer& tokenizer) {
  const std::vector<int32_t> word = tokenizer.encode("b");
  const std::vector<int32_t> spaced = tokenizer.encode("b ");
  REQUIRE(std::equal(word.begin(), word.end(), spaced.begin()));
  return {spaced.begin() + std::ptrdiff_t(word.size()), spaced.end()};
}

TEST_CASE("stop tokens hold every end id; a reply is still closed and ended with the one EOS") {
  auto source = hf_source();
  source.more_end_ids = {generation_eos(kImEnd), generation_eos(kEot)};
  const Tokenizer tokenizer(source);
  const std::vector<int32_t> reply = tokenizer.encode("b");  // a reply the end follows

  const ChatTemplate raw(TemplateKind::raw, tokenizer);
  CHECK(raw.stop_tokens() == std::vector<int32_t>{kEos, kImEnd, kEot, kBos});
  CHECK(raw.end_reply(reply) == std::vector<int32_t>{kEos});

  const ChatTemplate chatml(TemplateKind::chatml, tokenizer);
  CHECK(chatml.stop_tokens() == std::vector<int32_t>{kImEnd, kEos, kEot});
  CHECK(chatml.close_reply(reply) == std::vector<int32_t>{kImEnd});
  CHECK(chatml.end_reply(reply) == std::vector<int32_t>{kImEnd});

  for (TemplateKind kind : {TemplateKind::mistral, TemplateKind::zephyr}) {
    CAPTURE(template_name(kind));
    const ChatTemplate chat(kind, tokenizer);
    CHECK(chat.stop_tokens() == std::vector<int32_t>{kEos, kImEnd, kEot});
    CHECK(chat.close_reply(reply) == std::vector<int32_t>{kEos});
    CHECK(chat.end_reply(reply) == std::vector<int32_t>{kEos});
  }
  // Llama 2 ends a reply with " </s>": the space is text that continues the reply.
  const ChatTemplate llama2(TemplateKind::llama2, tokenizer);
  std::vector<int32_t> space_eos = space_after_word(tokenizer);
  space_eos.push_back(kEos);
  CHECK(llama2.stop_tokens() == std::vector<int32_t>{kEos, kImEnd, kEot});
  CHECK(llama2.close_reply(reply) == space_eos);
  CHECK(llama2.end_reply(reply) == space_eos);

  // An EOS config.json names closes and ends the templates that end with the EOS.
  auto im_end_eos = hf_source();
  im_end_eos.eos = config_eos(kImEnd);
  const Tokenizer configured(im_end_eos);
  const ChatTemplate mistral(TemplateKind::mistral, configured);
  CHECK(mistral.stop_tokens() == std::vector<int32_t>{kImEnd});
  CHECK(mistral.close_reply(reply) == std::vector<int32_t>{kImEnd});
  CHECK(mistral.end_reply(reply) == std::vector<int32_t>{kImEnd});
  std::vector<int32_t> space_im_end = space_after_word(configured);
  space_im_end.push_back(kImEnd);
  CHECK(ChatTemplate(TemplateKind::llama2, configured).end_reply(configured.encode("b")) ==
        space_im_end);
}

}  // namespace parley::text

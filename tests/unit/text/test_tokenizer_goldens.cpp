// The tokenizer against the sentencepiece goldens, built both from tokenizer.model bytes and
// from a GGUF-style vocabulary (the latter exercises the in-memory ModelProto).
#include <doctest/doctest.h>

#include "support/shared_assets.h"
#include "text/tokenizer.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

void check_goldens(const Tokenizer& tokenizer, const std::filesystem::path& goldens) {
  const auto cases = test::load_tokenize_goldens(goldens);
  REQUIRE(!cases.empty());
  for (const auto& golden : cases) {
    CAPTURE(test::escaped(golden.text));
    CHECK(tokenizer.encode(golden.text) == golden.ids);
    CHECK(tokenizer.decode(golden.ids) == golden.decoded);
  }
}

TEST_CASE("Llama 2 tokenizer.model reproduces the sentencepiece goldens") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kLlama2Goldens);
  const Tokenizer tokenizer(test::proto_source(model));
  CHECK(tokenizer.n_vocab() == 32000);
  CHECK(tokenizer.bos_id() == 1);
  CHECK(tokenizer.eos_id() == 2);
  CHECK(tokenizer.adds_dummy_prefix());
  check_goldens(tokenizer, goldens);
}

TEST_CASE("tok512 tokenizer.model reproduces the sentencepiece goldens") {
  PARLEY_SHARED_OR_SKIP(model, test::kTok512Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kTok512Goldens);
  const Tokenizer tokenizer(test::proto_source(model));
  CHECK(tokenizer.n_vocab() == 512);
  CHECK(tokenizer.adds_dummy_prefix());
  check_goldens(tokenizer, goldens);
}

TEST_CASE("a GGUF vocabulary taken from the Llama 2 model reproduces the same goldens") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kLlama2Goldens);
  // Llama 2's normalizer keeps extra whitespace.
  const Tokenizer tokenizer(test::vocab_source(test::vocab_from_spm(model, false)));
  CHECK(tokenizer.n_vocab() == 32000);
  CHECK(tokenizer.bos_id() == 1);
  CHECK(tokenizer.eos_id() == 2);
  CHECK(tokenizer.adds_dummy_prefix());
  check_goldens(tokenizer, goldens);
}

TEST_CASE("a GGUF vocabulary taken from the tok512 model reproduces the same goldens") {
  PARLEY_SHARED_OR_SKIP(model, test::kTok512Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kTok512Goldens);
  // As in the stories260k GGUF files: remove_extra_whitespaces copied from tok512's normalizer.
  const Tokenizer tokenizer(test::vocab_source(test::vocab_from_spm(model, true)));
  check_goldens(tokenizer, goldens);
}

TEST_CASE("both sources give the same pieces for every id") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const Tokenizer from_proto(test::proto_source(model));
  const Tokenizer from_vocab(test::vocab_source(test::vocab_from_spm(model, false)));
  REQUIRE(from_proto.n_vocab() == from_vocab.n_vocab());
  for (int32_t id = 0; id < from_proto.n_vocab(); ++id) {
    CAPTURE(id);
    REQUIRE(from_proto.piece_bytes(id) == from_vocab.piece_bytes(id));
    REQUIRE(from_proto.is_control(id) == from_vocab.is_control(id));
  }
}

TEST_CASE("add_space_prefix = false: no dummy prefix before the text") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const auto sp = test::load_spm(model);
  auto vocab = test::vocab_from_spm(model, false);
  vocab.add_space_prefix = false;
  const Tokenizer tokenizer(test::vocab_source(vocab));
  CHECK_FALSE(tokenizer.adds_dummy_prefix());
  // "Hello" as a word-internal piece, not "▁Hello".
  REQUIRE(sp->PieceToId("Hello") != sp->unk_id());
  CHECK(tokenizer.encode("Hello") == std::vector<int32_t>{sp->PieceToId("Hello")});
  CHECK(tokenizer.encode(" Hello") == std::vector<int32_t>{sp->PieceToId("\xE2\x96\x81Hello")});
}

}  // namespace
}  // namespace parley::text

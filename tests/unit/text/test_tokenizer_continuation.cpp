// Tokenizer::encode_continuation against the sentencepiece goldens: the end of a golden text,
// from a word's start or a punctuation mark on, encodes to the ids it has inside the whole
// text, as a model writing on after the text before it would give them.
#include <doctest/doctest.h>

#include <cctype>

#include "support/shared_assets.h"
#include "text/tokenizer.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

// Checks every tail that starts at a piece beginning with a space or made of one ASCII
// punctuation mark; returns how many were checked.
size_t check_tails(const Tokenizer& tokenizer, const std::filesystem::path& goldens) {
  size_t checked = 0;
  for (const auto& golden : test::load_tokenize_goldens(goldens)) {
    if (golden.decoded != golden.text || golden.ids.empty()) continue;  // whitespace changed
    // The first piece's space is the dummy prefix, not the text's.
    const size_t dummy = tokenizer.adds_dummy_prefix() ? 1 : 0;
    size_t offset = 0;  // where piece k starts, the dummy prefix counted
    for (size_t k = 0; k < golden.ids.size(); ++k) {
      const std::string piece = tokenizer.piece_bytes(golden.ids[k]);
      const bool word_start = piece.starts_with(' ');
      const bool punctuation = piece.size() == 1 && std::ispunct(uint8_t(piece[0]));
      if (k > 0 && (word_start || punctuation)) {
        const std::string tail = golden.text.substr(offset - dummy);
        CAPTURE(test::escaped(golden.text));
        CAPTURE(test::escaped(tail));
        CHECK(tokenizer.encode_continuation(tail) ==
              std::vector<int32_t>(golden.ids.begin() + std::ptrdiff_t(k), golden.ids.end()));
        ++checked;
      }
      offset += piece.size();
    }
  }
  return checked;
}

TEST_CASE("the end of a Llama 2 golden text continues as the whole text's ids") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kLlama2Goldens);
  CHECK(check_tails(Tokenizer(test::proto_source(model)), goldens) >= 20);
  CHECK(check_tails(Tokenizer(test::vocab_source(test::vocab_from_spm(model, false))), goldens) >=
        20);
}

TEST_CASE("the end of a tok512 golden text continues as the whole text's ids") {
  PARLEY_SHARED_OR_SKIP(model, test::kTok512Model);
  PARLEY_SHARED_OR_SKIP(goldens, test::kTok512Goldens);
  // tok512 drops leading spaces: the space before a word must still become its U+2581.
  CHECK(check_tails(Tokenizer(test::proto_source(model)), goldens) >= 20);
  CHECK(check_tails(Tokenizer(test::vocab_source(test::vocab_from_spm(model, true))), goldens) >=
        20);
}

TEST_CASE("continuing text: punctuation joins, a space starts a word, nothing is nothing") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const auto sp = test::load_spm(model);
  const Tokenizer tokenizer(test::proto_source(model));
  CHECK(tokenizer.encode_continuation(",") == std::vector<int32_t>{sp->PieceToId(",")});
  CHECK(tokenizer.encode(",") != tokenizer.encode_continuation(","));
  CHECK(tokenizer.encode_continuation(" Hello") == tokenizer.encode("Hello"));
  CHECK(tokenizer.encode_continuation("").empty());
  CHECK_THROWS(tokenizer.encode_continuation("\xC3"));
}

TEST_CASE("continuing text keeps the spaces it ends with, also where the normalizer drops them") {
  for (const char* path : {test::kLlama2Model, test::kTok512Model}) {
    CAPTURE(path);
    PARLEY_SHARED_OR_SKIP(model, path);
    const auto sp = test::load_spm(model);
    const int32_t piece = sp->PieceToId("\u2581");
    const int32_t space = piece != sp->unk_id() ? piece : sp->PieceToId("<0x20>");
    REQUIRE(space != sp->unk_id());
    const Tokenizer tokenizer(test::proto_source(model));
    CHECK(tokenizer.encode_continuation(" ") == std::vector<int32_t>{space});
    // Spaces after text too, and Llama 2 has pieces of several spaces.
    for (const char* text : {"   ", "a ", "*nods*  ", " to the  "}) {
      CAPTURE(text);
      std::string pieces;
      for (const int32_t id : tokenizer.encode_continuation(text)) {
        pieces += tokenizer.piece_bytes(id);
      }
      CHECK(pieces == text);
    }
  }
}

TEST_CASE("without a dummy prefix, continuing text is encoded as any text") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  auto vocab = test::vocab_from_spm(model, false);
  vocab.add_space_prefix = false;
  const Tokenizer tokenizer(test::vocab_source(vocab));
  for (const char* text : {",", " Hello", "Hello world.", ""}) {
    CAPTURE(text);
    CHECK(tokenizer.encode_continuation(text) == tokenizer.encode(text));
  }
}

}  // namespace
}  // namespace parley::text

// Token ids -> streamed text, checked against sentencepiece's DecodeIds.
#include <doctest/doctest.h>

#include <random>

#include "support/shared_assets.h"
#include "text/tokenizer.h"
#include "text/utf8_stream.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Streams `ids` one at a time; checks that every piece handed out is valid UTF-8.
std::string stream_ids(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool strip) {
  DetokenizeStream stream(tokenizer, strip);
  std::string out;
  for (int32_t id : ids) {
    const std::string part = stream.push(id);
    CHECK(is_valid_utf8(part));
    out += part;
  }
  const std::string tail = stream.finish();
  CHECK(is_valid_utf8(tail));
  return out + tail;
}

// What sentencepiece decodes for BOS + ids (BOS: the start of a text, the raw template's
// first turn), or nullopt where it had to replace invalid bytes (it does so per byte, the
// stream per maximal subpart, so they only agree on valid text).
std::optional<std::string> spm_decode_after_bos(const sentencepiece::SentencePieceProcessor& sp,
                                                const std::vector<int32_t>& ids) {
  std::vector<int> with_bos{sp.bos_id()};
  with_bos.insert(with_bos.end(), ids.begin(), ids.end());
  std::string text = sp.DecodeIds(with_bos);
  if (text.find(kFffd) != std::string::npos) return std::nullopt;
  // Where Parley differs on purpose: a NUL byte (<0x00>) comes out as U+FFFD.
  for (size_t at = text.find('\0'); at != std::string::npos; at = text.find('\0', at)) {
    text.replace(at, 1, kFffd);
  }
  return text;
}

std::vector<int32_t> with_bos(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::vector<int32_t> out{tokenizer.bos_id()};
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

void check_goldens_stream_like_decode(const char* model_path, const char* goldens_path) {
  PARLEY_SHARED_OR_SKIP(model, model_path);
  PARLEY_SHARED_OR_SKIP(goldens, goldens_path);
  const auto sp = test::load_spm(model);
  const Tokenizer tokenizer(test::proto_source(model));
  for (const auto& golden : test::load_tokenize_goldens(goldens)) {
    CAPTURE(test::escaped(golden.text));
    const auto expected = spm_decode_after_bos(*sp, golden.ids);
    REQUIRE(expected.has_value());
    CHECK(stream_ids(tokenizer, with_bos(tokenizer, golden.ids), false) == *expected);
  }
}

TEST_CASE("BOS + golden ids stream to what DecodeIds gives (Llama 2)") {
  check_goldens_stream_like_decode(test::kLlama2Model, test::kLlama2Goldens);
}

TEST_CASE("BOS + golden ids stream to what DecodeIds gives (tok512)") {
  check_goldens_stream_like_decode(test::kTok512Model, test::kTok512Goldens);
}

TEST_CASE("BOS + random ids stream to what DecodeIds gives") {
  for (const char* path : {test::kLlama2Model, test::kTok512Model}) {
    PARLEY_SHARED_OR_SKIP(model, path);
    const auto sp = test::load_spm(model);
    const Tokenizer tokenizer(test::proto_source(model));
    std::mt19937 rng(2024);
    std::uniform_int_distribution<int32_t> any_id(0, tokenizer.n_vocab() - 1);
    std::uniform_int_distribution<int32_t> byte_id(3, 3 + 255);  // <0x00>..<0xFF> in both
    std::uniform_int_distribution<int> length(1, 12);
    std::bernoulli_distribution take_byte(0.3);
    int compared = 0;
    for (int round = 0; round < 3000; ++round) {
      std::vector<int32_t> ids;
      for (int n = length(rng); n > 0; --n) {
        int32_t id = take_byte(rng) ? byte_id(rng) : any_id(rng);
        // A BOS inside a reply re-arms the stream's space stripping (as llama2.c does), where
        // DecodeIds only strips at the start of the whole text; the two differ by design there.
        if (id == tokenizer.bos_id()) id = tokenizer.eos_id();
        ids.push_back(id);
      }
      CAPTURE(test::ids_text(ids));
      const std::string streamed = stream_ids(tokenizer, with_bos(tokenizer, ids), false);
      if (const auto expected = spm_decode_after_bos(*sp, ids)) {
        CHECK(streamed == *expected);
        ++compared;
      }
    }
    // tok512 is half byte pieces, so fewer random sequences decode to valid UTF-8 there.
    CAPTURE(std::string(path));
    CHECK(compared > 300);
  }
}

TEST_CASE("a NUL byte token streams and decodes as U+FFFD: C strings stay whole") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const auto sp = test::load_spm(model);
  const Tokenizer tokenizer(test::proto_source(model));
  const int32_t nul = sp->PieceToId("<0x00>");
  const int32_t h = sp->PieceToId("h");
  REQUIRE(sp->DecodeIds({h, nul, h}) == std::string("h\0h", 3));  // sentencepiece's own
  CHECK(stream_ids(tokenizer, with_bos(tokenizer, {h, nul, h}), false) ==
        "h" + std::string(kFffd) + "h");
  CHECK(tokenizer.decode(std::vector<int32_t>{h, nul, h}) == "h" + std::string(kFffd) + "h");
}

TEST_CASE("an emoji spelled as four byte tokens comes out only after the fourth") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const Tokenizer tokenizer(test::proto_source(model));
  // Llama 2 encodes "😀" as ▁ <0xF0> <0x9F> <0x98> <0x80> (see the goldens).
  const auto ids = tokenizer.encode("\xF0\x9F\x98\x80");
  REQUIRE(ids == std::vector<int32_t>{29871, 243, 162, 155, 131});
  DetokenizeStream stream(tokenizer, true);
  CHECK(stream.push(ids[0]) == "");  // the reply's leading space
  CHECK(stream.push(ids[1]) == "");
  CHECK(stream.push(ids[2]) == "");
  CHECK(stream.push(ids[3]) == "");
  CHECK(stream.push(ids[4]) == "\xF0\x9F\x98\x80");
  CHECK(stream.finish() == "");
}

TEST_CASE("CJK characters spelled as byte tokens come out whole (tok512)") {
  PARLEY_SHARED_OR_SKIP(model, test::kTok512Model);
  const Tokenizer tokenizer(test::proto_source(model));
  // From the tok512 goldens: "日本" = ▁ <0xE6> <0x97> <0xA5> <0xE6> <0x9C> <0xAC>.
  const std::vector<int32_t> ids{410, 233, 154, 168, 233, 159, 175};
  DetokenizeStream stream(tokenizer, false);
  std::vector<std::string> parts;
  for (int32_t id : ids) parts.push_back(stream.push(id));
  CHECK(parts == std::vector<std::string>{" ", "", "", "\xE6\x97\xA5", "", "", "\xE6\x9C\xAC"});
}

TEST_CASE("a cut-off byte sequence ends as U+FFFD") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const Tokenizer tokenizer(test::proto_source(model));
  DetokenizeStream stream(tokenizer, false);
  CHECK(stream.push(15043) == " Hello");
  CHECK(stream.push(243) == "");  // <0xF0>
  CHECK(stream.push(162) == "");  // <0x9F>
  CHECK(stream.finish() == kFffd);
}

TEST_CASE("strip_leading_space drops the first space of a reply, once") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const auto sp = test::load_spm(model);
  const Tokenizer tokenizer(test::proto_source(model));
  const int32_t hello = sp->PieceToId("\xE2\x96\x81Hello");
  const int32_t world = sp->PieceToId("\xE2\x96\x81world");
  const int32_t two_spaces = sp->PieceToId("\xE2\x96\x81\xE2\x96\x81");
  const int32_t bare_hello = sp->PieceToId("Hello");
  const int32_t eos = tokenizer.eos_id();

  CHECK(stream_ids(tokenizer, {hello, world}, true) == "Hello world");
  CHECK(stream_ids(tokenizer, {eos, hello, world}, true) == "Hello world");  // control first
  CHECK(stream_ids(tokenizer, {two_spaces, hello}, true) == "  Hello");      // one of three
  CHECK(stream_ids(tokenizer, {bare_hello, world}, true) == "Hello world");  // none to drop
  // A continuation (raw template) keeps its space.
  CHECK(stream_ids(tokenizer, {hello, world}, false) == " Hello world");
}

TEST_CASE("after BOS, only what sentencepiece drops at a text's start is dropped") {
  PARLEY_SHARED_OR_SKIP(model, test::kLlama2Model);
  const auto sp = test::load_spm(model);
  const Tokenizer tokenizer(test::proto_source(model));
  const int32_t bos = tokenizer.bos_id();
  const int32_t hello = sp->PieceToId("\xE2\x96\x81Hello");
  const int32_t once = sp->PieceToId("\xE2\x96\x81Once");
  const int32_t space_byte = sp->PieceToId("<0x20>");
  const int32_t unk = sp->unk_id();
  for (const std::vector<int32_t>& ids :
       {std::vector<int32_t>{hello}, {space_byte, hello}, {unk, hello}, {2, hello}}) {
    CAPTURE(test::ids_text(ids));
    std::vector<int> all{bos};
    all.insert(all.end(), ids.begin(), ids.end());
    CHECK(stream_ids(tokenizer, with_bos(tokenizer, ids), false) == sp->DecodeIds(all));
  }
  // A BOS later in running text starts a new text (TinyStories models separate stories with
  // BOS; llama2.c strips the space after it too).
  CHECK(stream_ids(tokenizer, {hello, bos, once}, false) == " HelloOnce");
}

}  // namespace
}  // namespace parley::text

// Bad inputs give the documented statuses with a message, never a crash.
#include <doctest/doctest.h>

#include "common/error.h"
#include "support/error_check.h"
#include "support/shared_assets.h"
#include "text/tokenizer.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

using test::error_of;

Status build_status(const model::GgufVocab& vocab) {
  return error_of([&] { Tokenizer t(test::vocab_source(vocab)); }).first;
}

std::string build_message(const model::GgufVocab& vocab) {
  return error_of([&] { Tokenizer t(test::vocab_source(vocab)); }).second;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("encode rejects invalid UTF-8") {
  const Tokenizer tokenizer(test::vocab_source(test::small_vocab({"\xE2\x96\x81", "a"})));
  for (const char* bad : {"\xC0\x80", "\xFF", "a\xE2\x82", "\xED\xA0\x80", "\x80"}) {
    CAPTURE(test::escaped(bad));
    CHECK(error_of([&] { tokenizer.encode(bad); }).first == Status::invalid_argument);
  }
  CHECK(tokenizer.encode("a") == std::vector<int32_t>{3, 4});
}

TEST_CASE("decode and piece_bytes reject ids outside the vocabulary, naming them") {
  const Tokenizer tokenizer(test::vocab_source(test::small_vocab({"a"})));
  const int32_t n = tokenizer.n_vocab();
  const std::vector<int32_t> negative{3, -1};
  const std::vector<int32_t> past_end{n};
  const auto [status1, message1] = error_of([&] { tokenizer.decode(negative); });
  CHECK(status1 == Status::invalid_argument);
  CHECK(contains(message1, "-1"));
  const auto [status2, message2] = error_of([&] { tokenizer.decode(past_end); });
  CHECK(status2 == Status::invalid_argument);
  CHECK(contains(message2, std::to_string(n)));
  CHECK(error_of([&] { tokenizer.piece_bytes(n); }).first == Status::invalid_argument);
  CHECK(error_of([&] { tokenizer.piece_bytes(-1); }).first == Status::invalid_argument);
  CHECK(tokenizer.decode(std::vector<int32_t>{}) == "");
}

TEST_CASE("malformed GGUF vocabularies are bad_model with a precise message") {
  const auto good = test::small_vocab({"\xE2\x96\x81", "a", "b"});
  REQUIRE(build_status(good) == Status::ok);

  SUBCASE("scores and tokens differ in length") {
    auto v = good;
    v.scores.pop_back();
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "tokenizer.ggml.scores"));
  }
  SUBCASE("token types and tokens differ in length") {
    auto v = good;
    v.token_types.push_back(1);
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "tokenizer.ggml.token_type"));
  }
  SUBCASE("BOS outside the vocabulary") {
    auto v = good;
    v.bos_id = int32_t(v.tokens.size());
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "bos_token_id"));
  }
  SUBCASE("EOS negative") {
    auto v = good;
    v.eos_id = -5;
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "eos_token_id"));
  }
  SUBCASE("BOS that is not a control token") {
    auto v = good;
    v.bos_id = 4;  // "a"
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("EOS typed user-defined that is not a chat marker") {
    auto v = good;
    v.token_types[2] = 4;  // "</s>"
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "eos_token_id names token 2 ('</s>') of type USER_DEFINED"));
  }
  SUBCASE("no unknown piece") {
    auto v = good;
    v.token_types[0] = 1;
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "UNKNOWN"));
  }
  SUBCASE("two unknown pieces") {
    auto v = good;
    v.token_types[4] = 2;
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("unk_id names a piece that is not the unknown one") {
    auto v = good;
    v.unk_id = 4;
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "unknown_token_id"));
  }
  SUBCASE("token types missing: nothing is unknown or control") {
    auto v = good;
    v.token_types.clear();
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("an empty piece") {
    auto v = good;
    v.tokens[4] = "";
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "token 4"));
  }
  SUBCASE("an unknown token type") {
    auto v = good;
    v.token_types[4] = 7;
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("a byte piece not written <0xNN>") {
    auto v = good;
    v.token_types[4] = 6;
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("some byte pieces but not all 256") {
    auto v = good;
    test::append_pieces(v, {"<0x00>", "<0x01>"}, 6);
    CHECK(build_status(v) == Status::bad_model);
    CHECK(contains(build_message(v), "256"));
  }
  SUBCASE("a byte piece twice") {
    auto v = good;
    test::append_byte_pieces(v);
    v.tokens.back() = "<0x00>";
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("padding id outside the vocabulary") {
    auto v = good;
    v.pad_id = 1000;
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("the same piece twice") {
    auto v = good;
    v.tokens[5] = v.tokens[4];
    CHECK(build_status(v) == Status::bad_model);
  }
  SUBCASE("no tokens at all") {
    model::GgufVocab v;
    v.model = "llama";
    CHECK(build_status(v) == Status::bad_model);
  }
}

TEST_CASE("a tokenizer family other than sentencepiece llama is unsupported") {
  auto v = test::small_vocab({"a"});
  v.model = "gpt2";
  CHECK(build_status(v) == Status::unsupported);
  v.model = "";
  CHECK(build_status(v) == Status::unsupported);
}

TEST_CASE("garbage tokenizer.model bytes are bad_model") {
  for (const std::string& bytes : {std::string("this is not a sentencepiece model"), std::string(),
                                  std::string("\x0a\x05\x0a\x03<u>", 7)}) {
    CAPTURE(test::escaped(bytes));
    model::TokenizerSource source;
    source.proto_bytes = bytes;
    CHECK(error_of([&] { Tokenizer t(source); }).first == Status::bad_model);
  }
}

TEST_CASE("a truncated tokenizer.model is bad_model") {
  PARLEY_SHARED_OR_SKIP(model, test::kTok512Model);
  auto source = test::proto_source(model);
  source.proto_bytes.resize(source.proto_bytes.size() / 2);
  CHECK(error_of([&] { Tokenizer t(source); }).first == Status::bad_model);
}

}  // namespace
}  // namespace parley::text

// The ModelProto writer and reader, checked through sentencepiece itself.
#include <doctest/doctest.h>

#include <sentencepiece_processor.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "support/shared_assets.h"
#include "text/spm_model_proto.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

TEST_CASE("parse_byte_piece accepts exactly sentencepiece's spelling") {
  CHECK(parse_byte_piece("<0x0A>") == uint8_t(0x0A));
  CHECK(parse_byte_piece("<0x00>") == uint8_t(0));
  CHECK(parse_byte_piece("<0xFF>") == uint8_t(0xFF));
  CHECK(parse_byte_piece("<0xff>") == std::nullopt);
  CHECK(parse_byte_piece("<0x0A") == std::nullopt);
  CHECK(parse_byte_piece("<0x0AB>") == std::nullopt);
  CHECK(parse_byte_piece("<0xG0>") == std::nullopt);
  CHECK(parse_byte_piece("0x0A") == std::nullopt);
}

TEST_CASE("sentencepiece loads the written proto with every piece, score, type and id") {
  const std::string space = "\xE2\x96\x81";  // U+2581
  auto vocab =
      test::small_vocab({space, "a", "b", space + "a", space + "ab", "c", "d", space + "cd"});
  test::append_byte_pieces(vocab);  // ids 11..266
  test::append_pieces(vocab, {"<pad>"}, 3);
  test::append_pieces(vocab, {"<spare>"}, 5);
  vocab.pad_id = int32_t(vocab.tokens.size()) - 2;
  validate_gguf_vocab(vocab);

  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(build_spm_model_proto(vocab));
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  REQUIRE(sp.GetPieceSize() == int(vocab.tokens.size()));
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    CAPTURE(id);
    CHECK(sp.IdToPiece(id) == vocab.tokens[size_t(id)]);
    CHECK(sp.GetScore(id) == vocab.scores[size_t(id)]);
    const int32_t type = vocab.token_types[size_t(id)];
    CHECK(sp.IsUnknown(id) == (type == 2));
    CHECK(sp.IsControl(id) == (type == 3));
    CHECK(sp.IsUnused(id) == (type == 5));
    CHECK(sp.IsByte(id) == (type == 6));
  }
  CHECK(sp.unk_id() == 0);
  CHECK(sp.bos_id() == 1);
  CHECK(sp.eos_id() == 2);
  CHECK(sp.pad_id() == vocab.pad_id);
  // BPE merges pairs into pieces of the vocabulary: "▁" "a" "b" -> "▁a" "b" -> "▁ab", but
  // "▁cd" cannot be reached without "▁c" or "cd" (UNIGRAM, the proto's default, would pick it).
  CHECK(sp.EncodeAsIds("ab") == std::vector<int>{7});
  CHECK(sp.EncodeAsIds("cd") == std::vector<int>{3, 8, 9});
  // Byte fallback: characters without a piece become their UTF-8 bytes, <0xNN> = 11 + NN.
  CHECK(sp.EncodeAsIds("ab A") == std::vector<int>{7, 3, 11 + 0x41});
  CHECK(sp.EncodeAsIds("\xC3\x83") == std::vector<int>{3, 11 + 0xC3, 11 + 0x83});
}

TEST_CASE("a piece twice is refused naming the piece and both ids") {
  auto vocab = test::small_vocab({"a", "~", "b", "~"});  // ids 3..6
  try {
    validate_gguf_vocab(vocab);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::bad_model);
    CHECK(std::string(e.what()) == "tokenizer.ggml.tokens: piece '~' appears twice (ids 4 and 6)");
  }
  // A user-defined or unused copy is the same piece to sentencepiece.
  for (int32_t type : {4, 5}) {
    CAPTURE(type);
    auto typed = test::small_vocab({"a", "~"});
    test::append_pieces(typed, {"~"}, type);
    CHECK_THROWS_AS(validate_gguf_vocab(typed), Error);
  }
}

TEST_CASE("a control piece may share its text with a normal one, as sentencepiece allows") {
  auto vocab = test::small_vocab({"a", "</s>"});  // "</s>" at 4 is text; 2 is the EOS
  validate_gguf_vocab(vocab);
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(build_spm_model_proto(vocab));
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  CHECK(sp.IsControl(2));
  CHECK_FALSE(sp.IsControl(4));
}

TEST_CASE("without byte pieces, byte fallback is off and unknown characters are <unk>") {
  sentencepiece::SentencePieceProcessor sp;
  const auto proto = build_spm_model_proto(test::small_vocab({"\xE2\x96\x81"}));
  REQUIRE(sp.LoadFromSerializedProto(proto).ok());
  CHECK(sp.EncodeAsIds("\xC3\x83") == std::vector<int>{3, 0});
}

TEST_CASE("the normalizer flags reach sentencepiece") {
  auto vocab = test::small_vocab({"\xE2\x96\x81", "a"});
  sentencepiece::SentencePieceProcessor sp;
  SUBCASE("dummy prefix on, extra whitespace kept (llama.cpp's defaults)") {
    REQUIRE(sp.LoadFromSerializedProto(build_spm_model_proto(vocab)).ok());
    CHECK(sp.EncodeAsIds("a  a") == std::vector<int>{3, 4, 3, 3, 4});
  }
  SUBCASE("no dummy prefix") {
    vocab.add_space_prefix = false;
    REQUIRE(sp.LoadFromSerializedProto(build_spm_model_proto(vocab)).ok());
    CHECK(sp.EncodeAsIds("a  a") == std::vector<int>{4, 3, 3, 4});
  }
  SUBCASE("extra whitespace removed") {
    vocab.remove_extra_whitespaces = true;
    REQUIRE(sp.LoadFromSerializedProto(build_spm_model_proto(vocab)).ok());
    CHECK(sp.EncodeAsIds("  a  a ") == std::vector<int>{3, 4, 3, 4});
  }
}

TEST_CASE("read_spm_model_info reads back types and the dummy-prefix flag") {
  auto vocab = test::small_vocab({"a"});
  test::append_pieces(vocab, {"<x>"}, 4);
  auto info = read_spm_model_info(build_spm_model_proto(vocab));
  CHECK(info.piece_types == std::vector<PieceType>{PieceType::unknown, PieceType::control,
                                                   PieceType::control, PieceType::normal,
                                                   PieceType::user_defined});
  CHECK(info.add_dummy_prefix);
  vocab.add_space_prefix = false;
  CHECK_FALSE(read_spm_model_info(build_spm_model_proto(vocab)).add_dummy_prefix);
}

TEST_CASE("read_spm_model_info agrees with sentencepiece on the reference models") {
  for (const char* path : {test::kLlama2Model, test::kTok512Model}) {
    PARLEY_SHARED_OR_SKIP(model, path);
    const auto sp = test::load_spm(model);
    const auto info = read_spm_model_info(test::read_file(model));
    REQUIRE(info.piece_types.size() == size_t(sp->GetPieceSize()));
    for (int id = 0; id < sp->GetPieceSize(); ++id) {
      const PieceType t = info.piece_types[size_t(id)];
      REQUIRE(sp->IsUnknown(id) == (t == PieceType::unknown));
      REQUIRE(sp->IsControl(id) == (t == PieceType::control));
      REQUIRE(sp->IsByte(id) == (t == PieceType::byte));
    }
    // Both leave add_dummy_prefix at its default (true) or set it true.
    CHECK(info.add_dummy_prefix);
  }
}

TEST_CASE("without_dummy_prefix turns only the dummy prefix off, as sentencepiece reads it") {
  for (const char* path : {test::kLlama2Model, test::kTok512Model}) {
    PARLEY_SHARED_OR_SKIP(model, path);
    const std::string proto = test::read_file(model);
    const std::string changed = without_dummy_prefix(proto);
    const auto before = read_spm_model_info(proto);
    const auto after = read_spm_model_info(changed);
    CHECK_FALSE(after.add_dummy_prefix);
    CHECK(after.piece_types == before.piece_types);
    sentencepiece::SentencePieceProcessor original;
    sentencepiece::SentencePieceProcessor continuing;
    REQUIRE(original.LoadFromSerializedProto(proto).ok());
    REQUIRE(continuing.LoadFromSerializedProto(changed).ok());
    // "Hello" alone is a word after the dummy prefix; without it, a word's inside.
    CHECK(original.EncodeAsPieces("Hello").front().starts_with("\xE2\x96\x81"));
    CHECK_FALSE(continuing.EncodeAsPieces("Hello").front().starts_with("\xE2\x96\x81"));
    CHECK(continuing.EncodeAsPieces("x Hello").back() == original.EncodeAsPieces("x Hello").back());
  }
}

TEST_CASE("read_spm_model_info rejects malformed wire data") {
  const auto proto = build_spm_model_proto(test::small_vocab({"a"}));
  const auto status_of = [](const std::string& bytes) {
    try {
      read_spm_model_info(bytes);
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  CHECK(status_of(proto) == Status::ok);
  CHECK(status_of(proto.substr(0, proto.size() - 1)) == Status::bad_model);  // field cut short
  CHECK(status_of(std::string("\x0a\xff", 2)) == Status::bad_model);         // truncated varint
  CHECK(status_of(std::string("\x0b", 1)) == Status::bad_model);              // wire type 3
  CHECK(status_of(std::string(11, '\xff')) == Status::bad_model);             // endless varint
}

TEST_CASE("looks_like_control: pieces written as chat markers are") {
  CHECK(looks_like_control("<|im_start|>"));
  CHECK(looks_like_control("<|user|>"));
  CHECK(looks_like_control("<|x|>"));
  CHECK_FALSE(looks_like_control("<||>"));  // nothing between the bars
  CHECK_FALSE(looks_like_control("<tool>"));
  CHECK_FALSE(looks_like_control("<|im_start"));
  CHECK_FALSE(looks_like_control("im_start|>"));
  CHECK_FALSE(looks_like_control(""));
  // The bracketed markers of the Llama 2 and Mistral formats, exactly.
  CHECK(looks_like_control("[INST]"));
  CHECK(looks_like_control("[/INST]"));
  CHECK(looks_like_control("<<SYS>>"));
  CHECK(looks_like_control("<</SYS>>"));
  CHECK_FALSE(looks_like_control("[INST"));
  CHECK_FALSE(looks_like_control("[inst]"));
  CHECK_FALSE(looks_like_control("[TOOL]"));
}

TEST_CASE("mark_control_looking_pieces makes only user-defined chat markers control") {
  auto vocab = test::small_vocab({"\xE2\x96\x81", "a", "<|plain|>"});  // ids 3..5
  test::append_pieces(vocab, {"<|im_start|>", "<tool>", "<|im_end|>"}, 4);  // ids 6..8
  test::append_pieces(vocab, {"<|control|>"}, 3);                          // id 9
  test::append_pieces(vocab, {"[/INST]"}, 4);                              // id 10
  const std::string original = build_spm_model_proto(vocab);
  const ControlLookingPieces marked = mark_control_looking_pieces(original);
  CHECK(marked.pieces == std::vector<std::string>{"<|im_start|>", "<|im_end|>", "[/INST]"});

  // sentencepiece reads the same pieces, scores, ids and special ids; two types changed.
  sentencepiece::SentencePieceProcessor before, after;
  REQUIRE(before.LoadFromSerializedProto(original).ok());
  REQUIRE(after.LoadFromSerializedProto(marked.model_proto).ok());
  REQUIRE(after.GetPieceSize() == before.GetPieceSize());
  for (int id = 0; id < after.GetPieceSize(); ++id) {
    CAPTURE(id);
    CHECK(after.IdToPiece(id) == before.IdToPiece(id));
    CHECK(after.GetScore(id) == before.GetScore(id));
    CHECK(after.IsControl(id) == (before.IsControl(id) || id == 6 || id == 8 || id == 10));
    CHECK(after.IsUnknown(id) == before.IsUnknown(id));
  }
  CHECK(after.bos_id() == before.bos_id());
  CHECK(after.eos_id() == before.eos_id());
  const auto types = read_spm_model_info(marked.model_proto).piece_types;
  CHECK(types[6] == PieceType::control);
  CHECK(types[7] == PieceType::user_defined);
  CHECK(types[8] == PieceType::control);
  CHECK(types[5] == PieceType::normal);
  CHECK(types[10] == PieceType::control);
  // sentencepiece matched the user-defined marker in text before, and no longer does.
  CHECK(before.EncodeAsIds("a<|im_start|>") == std::vector<int>{3, 4, 6});
  const auto ids = after.EncodeAsIds("a<|im_start|>");
  CHECK(std::find(ids.begin(), ids.end(), 6) == ids.end());
  CHECK(before.EncodeAsIds("a[/INST]") == std::vector<int>{3, 4, 10});
  const auto bracket = after.EncodeAsIds("a[/INST]");
  CHECK(std::find(bracket.begin(), bracket.end(), 10) == bracket.end());
}

TEST_CASE("mark_control_looking_pieces leaves a proto without such pieces byte for byte") {
  auto vocab = test::small_vocab({"a", "b"});
  test::append_pieces(vocab, {"<tool>"}, 4);
  test::append_pieces(vocab, {"<|im_start|>"}, 3);
  const std::string proto = build_spm_model_proto(vocab);
  const ControlLookingPieces marked = mark_control_looking_pieces(proto);
  CHECK(marked.pieces.empty());
  CHECK(marked.model_proto == proto);
}

TEST_CASE("mark_control_looking_pieces keeps fields it does not know, and rejects bad wire data") {
  auto vocab = test::small_vocab({"a"});
  test::append_pieces(vocab, {"<|m|>"}, 4);
  // Field 99 (varint 7) after the pieces: not sentencepiece's, carried over as it is.
  const std::string proto = build_spm_model_proto(vocab) + std::string("\x98\x06\x07", 3);
  const auto marked = mark_control_looking_pieces(proto);
  CHECK(marked.pieces == std::vector<std::string>{"<|m|>"});
  CHECK(marked.model_proto.substr(marked.model_proto.size() - 3) == std::string("\x98\x06\x07", 3));
  const auto status_of = [](const std::string& bytes) {
    try {
      mark_control_looking_pieces(bytes);
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  CHECK(status_of(proto.substr(0, proto.size() - 4)) == Status::bad_model);
  CHECK(status_of(std::string("\x0b", 1)) == Status::bad_model);
}

}  // namespace
}  // namespace parley::text

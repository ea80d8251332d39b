// Counting a tokenizer.model's pieces without sentencepiece, checked against sentencepiece's
// own count of the Llama 2 tokenizer (32000) and against malformed bytes.
#include <doctest/doctest.h>

#include <string>

#include "model/model_proto_pieces.h"
#include "model/text_file.h"
#include "support/shared_assets.h"

using parley::model::count_model_proto_pieces;

TEST_CASE("count_model_proto_pieces: the Llama 2 tokenizer has 32000 pieces") {
  PARLEY_SHARED_OR_SKIP(path, "tokenizers/llama2/tokenizer.model");
  const std::string proto = parley::model::read_text_file(path, 64u << 20);
  CHECK(count_model_proto_pieces(proto) == 32000);
}

TEST_CASE("count_model_proto_pieces: other fields are skipped, malformed bytes are nullopt") {
  // pieces {piece: "a"} twice, then a varint field 3 and a fixed32 field 4.
  const std::string piece = std::string(
      "\x0A\x03\x0A\x01"
      "a",
      5);
  const std::string proto = piece + piece + std::string("\x18\x05\x25\x01\x02\x03\x04", 7);
  CHECK(count_model_proto_pieces(proto) == 2);
  CHECK(count_model_proto_pieces("") == 0);
  CHECK_FALSE(count_model_proto_pieces(std::string("\x0A\x09"
                                                   "ab",
                                                   4))
                  .has_value());
  CHECK_FALSE(count_model_proto_pieces(std::string("\x0F", 1)).has_value());  // wire type 7
  CHECK_FALSE(count_model_proto_pieces(std::string("\x08\xFF", 2)).has_value());
}

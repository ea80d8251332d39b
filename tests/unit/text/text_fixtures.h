// Inputs shared by the text tests: the tokenization goldens, and tokenizer sources built from
// the reference tokenizer.model files either as they are or as a GGUF-style vocabulary read out
// of them with the sentencepiece API (so the expected values never come from Parley's code).
#pragma once

#include <sentencepiece_processor.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer_source.h"

namespace parley::test {

// Paths under the shared reference folder.
inline constexpr const char* kLlama2Model = "tokenizers/llama2/tokenizer.model";
inline constexpr const char* kTok512Model = "models/stories260k/hf/tokenizer.model";
inline constexpr const char* kLlama2Goldens = "golden/tokenize_llama2.jsonl";
inline constexpr const char* kTok512Goldens = "golden/tokenize_tok512.jsonl";

struct TokenizeGolden {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};
std::vector<TokenizeGolden> load_tokenize_goldens(const std::filesystem::path& jsonl);

// sentencepiece itself, the oracle for expected values.
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::filesystem::path& file);

model::TokenizerSource proto_source(const std::filesystem::path& model_file);

// What a GGUF converter would write for this tokenizer.model: pieces, scores, types and
// special ids; the normalizer flags are not in the sentencepiece API, so the caller says them.
model::GgufVocab vocab_from_spm(const std::filesystem::path& model_file,
                                bool remove_extra_whitespaces);

model::TokenizerSource vocab_source(model::GgufVocab vocab);

// Appends pieces of one type (GGUF token_type numbers: 3 control, 4 user-defined).
void append_pieces(model::GgufVocab& vocab, const std::vector<std::string>& pieces, int32_t type);

// Appends <0x00>..<0xFF> as byte pieces.
void append_byte_pieces(model::GgufVocab& vocab);

// A tiny valid vocabulary: <unk>, <s>, </s>, then `pieces` as normal pieces with falling scores.
model::GgufVocab small_vocab(const std::vector<std::string>& pieces);

// The bytes as \xNN escapes, and ids as "[1, 2]", for readable failure messages.
std::string escaped(std::string_view bytes);
std::string ids_text(const std::vector<int32_t>& ids);

}  // namespace parley::test

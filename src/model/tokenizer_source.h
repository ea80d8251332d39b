// What the loader hands to the tokenizer: either a sentencepiece ModelProto file's bytes
// (Hugging Face tokenizer.model) or a GGUF vocabulary to build one from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parley::model {

struct GgufVocab {
  std::string model;                 // tokenizer.ggml.model, e.g. "llama"
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<float> scores;         // tokenizer.ggml.scores (empty: all 0)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all normal)
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t pad_id = -1;
  bool add_space_prefix = true;           // tokenizer.ggml.add_space_prefix (llama.cpp default)
  bool remove_extra_whitespaces = false;  // tokenizer.ggml.remove_extra_whitespaces
};

// A special token id named by a model file, with the file and key it came from (e.g.
// "config.json: eos_token_id"), which an error names when the id is unfit.
struct NamedTokenId {
  int32_t id = 0;
  std::string source;
};

// A token a Hugging Face tokenizer adds to its tokenizer.model (tokenizer_config.json's
// added_tokens_decoder, tokenizer.json's added_tokens or added_tokens.json): special ones load
// as CONTROL pieces, the others as USER_DEFINED.
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
};

// What a Hugging Face directory puts on top of its tokenizer.model's pieces.
struct AddedPieces {
  std::vector<AddedToken> tokens;
  std::string tokens_file;  // the file `tokens` came from, for messages
  // The model's vocabulary size (its embedding rows): pieces are padded with UNUSED ones up
  // to it, so that ids line up; 0 when none is given (no padding).
  int32_t pad_to = 0;
  std::string pad_to_source;  // e.g. "config.json: vocab_size"
  // tokenizer.model's pieces: tokens with lower ids only restate them (and are checked to).
  int32_t n_own_pieces = 0;
};

struct TokenizerSource {
  enum class Kind { sentencepiece_proto, gguf_vocab } kind = Kind::sentencepiece_proto;
  std::string proto_bytes;  // Kind::sentencepiece_proto: the serialized ModelProto
  AddedPieces added;        // Kind::sentencepiece_proto: appended to the ModelProto's pieces
  GgufVocab vocab;          // Kind::gguf_vocab
  // BOS and EOS as a file beside the tokenizer names them (Hugging Face config.json), in
  // place of the tokenizer's own; absent when none does.
  std::optional<NamedTokenId> bos;
  std::optional<NamedTokenId> eos;
  // Further ids that end a reply besides the EOS (an eos_token_id list's others,
  // generation_config.json's, GGUF's end-of-turn and end-of-message tokens).
  std::vector<NamedTokenId> more_end_ids;
};

}  // namespace parley::model

// Hyperparameters and vocabulary of a Llama-family model from GGUF metadata
// (general.*, llama.*, tokenizer.ggml.*, tokenizer.chat_template).
#pragma once

#include <vector>

#include "model/gguf_reader.h"
#include "model/model_config.h"
#include "model/tokenizer_source.h"

namespace parley::model {

struct GgufModelInfo {
  ModelConfig config;  // not yet validate()d
  // tokens/types have config.n_vocab entries, scores too or none. Types as llama.cpp reads
  // them: 0 (undefined) is normal; without the key, all are normal but the unknown (the key's
  // id, else the piece "<unk>"), BOS and EOS tokens. A padding id outside the vocabulary (any
  // integer, 0xFFFFFFFF too) is dropped (-1) with a warning.
  GgufVocab vocab;
  // tokenizer.ggml.eot_token_id and eom_token_id where present: they end a reply too.
  std::vector<NamedTokenId> more_end_ids;
};

// Throws Error(bad_model) naming the key for missing, mistyped or inconsistent metadata,
// Error(unsupported) for another architecture, mixture of experts, tokenizer model or RoPE
// scaling as llama.cpp reads the keys (a type other than "none", a factor other than 0 or 1
// without a type, an attn_factor other than 1).
GgufModelInfo read_gguf_metadata(const GgufFile& file);

}  // namespace parley::model

// Hyperparameters of a Hugging Face Llama/Mistral directory: config.json, plus the chat
// template and add_bos_token of tokenizer_config.json, and generation_config.json's end ids.
// (The loader takes chat_template.jinja's template over tokenizer_config.json's.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"

namespace parley::model {

struct HfConfig {
  ModelConfig config;  // not yet validate()d
  bool tie_word_embeddings = false;
  // bos_token_id, and every id of eos_token_id (one id or a list, whose first is the EOS):
  // absent or empty when config.json does not say. config.bos_id/eos_id take the first, else
  // keep their defaults.
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
};

// `tokenizer_config_json` is "" when the file is absent. `name` becomes config.name. The RoPE
// base is rope_parameters' rope_theta, else the top-level one, else 10000.
// Throws Error(bad_model) naming the field (also for a top-level rope_theta and a
// rope_parameters one that differ), Error(unsupported) for another model type, mixture of
// experts, RoPE scaling (a rope_scaling or rope_parameters of a rope_type other than "default",
// rope_parameters per layer type that differ), activation or biases.
// A pad_token_id outside the vocabulary is dropped with a warning.
HfConfig parse_hf_config(std::string_view config_json, std::string_view tokenizer_config_json,
                         std::string name);

// The ids generation_config.json's eos_token_id (one id or a list) names; empty when absent.
// Throws Error(bad_model) naming the file and the key when malformed.
std::vector<int32_t> parse_generation_eos_ids(std::string_view generation_config_json);

}  // namespace parley::model

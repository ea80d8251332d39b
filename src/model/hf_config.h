// Hyperparameters of a Hugging Face Llama/Mistral directory: config.json, plus the chat
// template and add_bos_token of tokenizer_config.json.
#pragma once

#include <string>
#include <string_view>

#include "model/model_config.h"

namespace parley::model {

struct HfConfig {
  ModelConfig config;  // not yet validate()d
  bool tie_word_embeddings = false;
};

// `tokenizer_config_json` is "" when the file is absent. `name` becomes config.name.
// Throws Error(bad_model) naming the field, Error(unsupported) for another model type,
// RoPE scaling, activation or biases.
HfConfig parse_hf_config(std::string_view config_json, std::string_view tokenizer_config_json,
                         std::string name);

}  // namespace parley::model

// Picks the reader for a path (GGUF file or Hugging Face directory) and builds a validated
// model: config, weight views, tokenizer source and fingerprint.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/load_progress.h"
#include "model/mapped_file.h"
#include "model/model_config.h"
#include "model/tokenizer_source.h"
#include "model/weights.h"

namespace parley::model {

struct LoadedModel {
  ModelConfig config;
  Weights weights;            // views into `files` and weights.owned
  TokenizerSource tokenizer;
  uint64_t fingerprint = 0;   // hyperparameters + vocabulary + a sparse sample of every tensor
  uint64_t n_params = 0;
  std::vector<std::shared_ptr<MappedFile>> files;  // keep the mappings alive (shared by views)
};

// Throws Error: not_found (no such path), io, bad_model (names the field), unsupported;
// cancelled when `progress` is stopped. `progress`, when given, runs a stage over the weights
// converted at load (GGUF blocks of 4 to 6 bits), taking their share of the whole opening:
// the backend later reads every weight once more.
std::unique_ptr<LoadedModel> load_model(const std::string& path, LoadProgress* progress = nullptr);

}  // namespace parley::model

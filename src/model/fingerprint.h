// The model fingerprint: stored KV is reused only under the same one. It covers the
// architecture, hyperparameters, vocabulary and, for every tensor, its name, type, shape and
// a sparse sample of its bytes, so it costs microseconds even for 7B models.
#pragma once

#include <cstdint>

#include "model/model_config.h"
#include "model/tokenizer_source.h"
#include "model/weights.h"

namespace parley::model {

uint64_t model_fingerprint(const ModelConfig& config, const TokenizerSource& tokenizer,
                           const Weights& weights);

}  // namespace parley::model

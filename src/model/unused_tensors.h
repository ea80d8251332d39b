// Every tensor a model file holds must have a role. A tensor the model would leave unused makes
// the file another network (attention biases, more layers than its config declares): running
// it without that tensor would silently compute something else.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "model/model_config.h"
#include "model/weights.h"

namespace parley::model {

// Throws Error(bad_model) naming the first tensor of `tensors` (in file order) whose name is not
// in `used`, and how many there are, unless it only restates what the config says: a Hugging
// Face rotary_emb.inv_freq buffer (transformers recomputes it from the config too) or a GGUF
// rope_freqs.weight of ones. A rope_freqs.weight with other factors (llama3-style RoPE
// scaling) is Error(unsupported).
void check_every_tensor_used(const std::vector<FileTensor>& tensors,
                             const std::unordered_set<std::string>& used, TensorNaming naming,
                             const ModelConfig& config);

}  // namespace parley::model

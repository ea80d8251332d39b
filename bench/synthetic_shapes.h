// Known model shapes for --synthetic: the hyperparameters of real checkpoints, so that
// figures measured on random weights match what those models would cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace parley::bench {

struct SyntheticShape {
  std::string_view name;
  int32_t dim;
  int32_t hidden_dim;
  int32_t n_layers;
  int32_t n_heads;
  int32_t n_kv_heads;
  int32_t n_vocab;
  int32_t context_length;
  bool tied_output;  // the output matrix is the token embedding
};

const std::vector<SyntheticShape>& synthetic_shapes();
std::optional<SyntheticShape> find_synthetic_shape(std::string_view name);

}  // namespace parley::bench

// Test helpers over loaded weights: every view under a role name, in a fixed order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/weights.h"

namespace parley::test {

inline std::vector<std::pair<std::string, const model::TensorView*>> all_views(
    const model::Weights& w) {
  std::vector<std::pair<std::string, const model::TensorView*>> out;
  out.emplace_back("tok_embd", &w.tok_embd);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const model::LayerWeights& L = w.layers[l];
    const std::string p = "layer" + std::to_string(l) + ".";
    out.emplace_back(p + "attn_norm", &L.attn_norm);
    out.emplace_back(p + "wq", &L.wq);
    out.emplace_back(p + "wk", &L.wk);
    out.emplace_back(p + "wv", &L.wv);
    out.emplace_back(p + "wo", &L.wo);
    out.emplace_back(p + "ffn_norm", &L.ffn_norm);
    out.emplace_back(p + "w_gate", &L.w_gate);
    out.emplace_back(p + "w_up", &L.w_up);
    out.emplace_back(p + "w_down", &L.w_down);
  }
  out.emplace_back("output_norm", &w.output_norm);
  out.emplace_back("output", &w.output);
  return out;
}

}  // namespace parley::test

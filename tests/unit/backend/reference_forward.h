// A naive Llama forward pass in double precision, written from the formulas and independent
// of the backend's code: the yardstick for the CPU backend's logits.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace parley::test {

// How a backend's stored K/V compare with the reference's own rounding of its K/V.
struct KvCheck {
  size_t values = 0;          // K and V values compared
  size_t rounding_flips = 0;  // one rounding step apart: a value next to a rounding boundary,
                              // from float (backend) vs double (reference) inputs
  size_t mismatches = 0;      // further apart: wrong
};

// Logits [tokens.size()][n_vocab]: row i after feeding tokens[i] at position i. K and V are
// rounded as kv_type stores them (INT8: s = max|x| / 127 per token and KV head, q =
// round-half-even(x / s) clamped to +-127; F16: round to nearest even; F32: kept in double).
// With backend_kv (a cache a backend filled from the same tokens), its K/V are compared with
// the reference's own into *check and then used for attention, so that rounding flips do not
// hide float-noise-level differences everywhere else.
std::vector<std::vector<double>> reference_forward(const model::ModelConfig& config,
                                                   const model::Weights& weights,
                                                   const std::vector<int32_t>& tokens,
                                                   kv::KvType kv_type,
                                                   const kv::KvCache* backend_kv = nullptr,
                                                   KvCheck* check = nullptr);

// Largest |a - b| over all rows.
double max_abs_diff(const std::vector<std::vector<double>>& a, const std::vector<float>& b);

}  // namespace parley::test

// Tiny random Llama models built in memory (no file, no loader) for backend tests, and the
// tests' own decoding of stored weights.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace parley::test {

struct TinySpec {
  int32_t n_vocab = 64;
  int32_t dim = 32;
  int32_t hidden_dim = 48;
  int32_t n_layers = 2;
  int32_t n_heads = 4;
  int32_t n_kv_heads = 4;
  int32_t head_dim = 8;
  int32_t sliding_window = 0;
  float rope_theta = 10000.0f;
  bool tied = false;
  // Matrices and the embedding; Q8_0 falls back to F16 for rows that are not a multiple of
  // 32 values (as GGUF writers do). Norm vectors are F32, except F16/BF16 for those types.
  model::DType dtype = model::DType::f32;
  uint32_t seed = 1;
};

struct TinyModel {
  model::ModelConfig config;
  model::Weights weights;  // views into weights.owned
};

TinyModel make_tiny_model(const TinySpec& spec);

// Stores values ([rows, cols], row-major) as a tensor of the given type owned by `owner`.
model::TensorView make_tensor(model::Weights& owner, const std::string& name, model::DType dtype,
                              int64_t rows, int64_t cols, const std::vector<float>& values);

// The stored values as doubles: what the reference computes with.
std::vector<double> decode_tensor(const model::TensorView& t);

// n values uniform in [-scale, scale].
std::vector<float> random_values(size_t n, float scale, std::mt19937& rng);

// Positions 0 .. positions - 1 of `layer` written with random K (within +-3) and V (within
// +-1) rows, K then V drawn per position.
void fill_kv_randomly(kv::KvCache& kv, int32_t layer, uint32_t positions, std::mt19937& rng);

}  // namespace parley::test

// Running a CpuBackend over a token sequence, for the backend tests.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_cache.h"
#include "tiny_model.h"

namespace parley::test {

// Grouped-query attention (8 query heads on 2 KV heads) with a hidden size that fills no
// vector evenly: the shape of the consistency tests.
inline TinySpec gqa_spec(model::DType dtype) {
  TinySpec s;
  s.n_vocab = 80;
  s.dim = 64;
  s.hidden_dim = 172;
  s.n_heads = 8;
  s.n_kv_heads = 2;
  s.head_dim = 8;
  s.dtype = dtype;
  s.seed = 11;
  return s;
}

inline kv::KvShape kv_shape_of(const model::ModelConfig& c) {
  return kv::KvShape{c.n_layers, c.n_kv_heads, c.head_dim};
}

inline std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = dist(rng);
  return t;
}

// Feeds tokens in chunks of the given sizes (summing to tokens.size()) into kv from
// position start_pos; returns the logits of every token, [n, n_vocab] flattened.
inline std::vector<float> run_chunks(backend::Backend& backend, kv::KvCache& kv,
                                     const std::vector<int32_t>& tokens,
                                     const std::vector<size_t>& chunks, int32_t n_vocab,
                                     uint32_t start_pos = 0) {
  std::vector<float> logits(tokens.size() * size_t(n_vocab));
  size_t done = 0;
  for (size_t n : chunks) {
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(tokens).subspan(done, n);
    batch.start_pos = start_pos + uint32_t(done);
    batch.all_logits = true;
    backend.forward(batch, kv,
                    std::span<float>(logits).subspan(done * size_t(n_vocab), n * size_t(n_vocab)));
    done += n;
  }
  return logits;
}

// All tokens in one call.
inline std::vector<float> run_all(backend::Backend& backend, kv::KvCache& kv,
                                  const std::vector<int32_t>& tokens, int32_t n_vocab) {
  return run_chunks(backend, kv, tokens, {tokens.size()}, n_vocab);
}

// Measured errors are printed when PARLEY_TEST_REPORT is set (for choosing tolerances).
inline void report(const std::string& text) {
  if (std::getenv("PARLEY_TEST_REPORT")) MESSAGE(text);
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
  }
  return worst;
}

}  // namespace parley::test

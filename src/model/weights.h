// Typed, shaped views of a model's weights. Views point into memory-mapped files or into
// buffers the Weights own (tensors rewritten at load, such as HF q/k rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace parley::model {

// A matrix [rows, cols] stored row-major (rows = out_features, cols = in_features), or a
// vector (rows = 1). GGUF's ne = [cols, rows]; safetensors' shape = [rows, cols].
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  const std::byte* data = nullptr;  // rows * row_bytes(dtype, cols) bytes
  size_t n_bytes = 0;

  bool empty() const { return data == nullptr; }
  int64_t n_elements() const { return rows * cols; }
  const std::byte* row(int64_t r) const { return data + size_t(r) * row_bytes(dtype, size_t(cols)); }
};

struct LayerWeights {
  TensorView attn_norm;  // [1, dim]
  TensorView wq;         // [n_heads * head_dim, dim]; rows in interleaved (Meta/GGUF) RoPE order
  TensorView wk;         // [n_kv_heads * head_dim, dim]; same order as wq
  TensorView wv;         // [n_kv_heads * head_dim, dim]
  TensorView wo;         // [dim, n_heads * head_dim]
  TensorView ffn_norm;   // [1, dim]
  TensorView w_gate;     // [hidden_dim, dim]
  TensorView w_up;       // [hidden_dim, dim]
  TensorView w_down;     // [dim, hidden_dim]
};

struct Weights {
  TensorView tok_embd;     // [n_vocab, dim]
  std::vector<LayerWeights> layers;
  TensorView output_norm;  // [1, dim]
  TensorView output;       // [n_vocab, dim]; the same bytes as tok_embd when tied
  bool tied_output = false;

  // Buffers behind views that are not in a mapped file.
  std::vector<std::unique_ptr<std::byte[]>> owned;
};

}  // namespace parley::model

// The model's weights on the device in one resident type (F32, F16 or BF16), converted there
// from the file's type after a raw upload. q/k/v and gate/up are fused into one matrix each,
// so a layer runs one product for each; norm vectors are F32.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cuda/device_memory.h"
#include "backend/cuda/module_api.h"

namespace parley::backend::cuda {

struct DeviceMatrix {
  const void* data = nullptr;  // [rows, cols] row-major in the resident type
  int64_t rows = 0;
  int64_t cols = 0;
};

struct ResidentLayer {
  DeviceMatrix wqkv;       // [(n_heads + 2 n_kv_heads) head_dim, dim]: wq rows, wk rows, wv rows
  DeviceMatrix wo;         // [dim, n_heads head_dim]
  DeviceMatrix w_gate_up;  // [2 hidden_dim, dim]: w_gate rows, then w_up rows
  DeviceMatrix w_down;     // [dim, hidden_dim]
  const float* attn_norm = nullptr;  // [dim]
  const float* ffn_norm = nullptr;   // [dim]
};

struct ResidentWeights {
  int32_t type = PARLEY_CUDA_F16;  // kernels::ElemType of every matrix
  DeviceMatrix tok_embd;           // [n_vocab, dim]
  DeviceMatrix output;             // [n_vocab, dim]; tok_embd's memory when tied
  const float* output_norm = nullptr;
  std::vector<ResidentLayer> layers;
  std::vector<DeviceBuffer> owned;
  uint64_t bytes = 0;  // device bytes of all weights
};

// The resident type for a requested one (PARLEY_CUDA_WEIGHTS_AUTO: BF16 for BF16 files,
// else F16).
int32_t resident_type(const parley_cuda_model& m);

// Throws Error(bad_model) for a tensor whose shape or size does not match the config,
// Error(out_of_memory) when the device cannot hold the weights.
ResidentWeights upload_weights(const parley_cuda_model& m, cudaStream_t stream);

}  // namespace parley::backend::cuda

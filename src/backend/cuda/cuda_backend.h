// The CUDA backend: the layer loop as cuBLAS products and launch_* calls on one stream, over
// resident weights and the device mirror of the KV blocks. Single-token steps are captured
// once as a CUDA graph and replayed. Not thread-safe: the host side serializes calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/decode_plan.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kv_mirror.h"
#include "backend/cuda/module_api.h"
#include "backend/cuda/resident_weights.h"
#include "kernels/common/paged_kv.cuh"
#include "kernels/launch.h"

namespace parley::backend::cuda {

class CudaBackend {
 public:
  // Throws Error: backend (no such device, CUDA failure), unsupported (a head size the
  // kernels lack), bad_model (weights that do not match the config), out_of_memory.
  CudaBackend(const parley_cuda_model& model, int32_t device);
  ~CudaBackend();

  static constexpr uint32_t kMaxBatch = 512;
  uint32_t max_batch() const { return kMaxBatch; }
  void forward(const parley_cuda_batch& batch, const parley_cuda_kv& kv, float* logits,
               uint64_t n_logits);
  // The device's bytes of a host block that forwards left on the device (write_host 0).
  void download(uint8_t* host_block, uint64_t stamp, int32_t kv_type, uint64_t block_bytes);

 private:
  struct Shape {
    int32_t n_vocab, dim, hidden, n_layers, n_heads, n_kv_heads, head_dim, window;
    float eps, theta;
    int64_t q_dim() const { return int64_t(n_heads) * head_dim; }
    int64_t qkv_width() const { return int64_t(n_heads + 2 * n_kv_heads) * head_dim; }
  };
  void validate(const parley_cuda_batch& batch, const parley_cuda_kv& kv, uint64_t n_logits) const;
  KvMirror& mirror_for(const parley_cuda_kv& kv);
  void reserve_step(uint32_t max_blocks, size_t staging_bytes, size_t logit_rows);
  // Every device operation of one call, on stream_ (captured when `graph`).
  void enqueue(int32_t n, int32_t rows, const kernels::PagedKv& kv, bool graph);
  void enqueue_layer(int32_t l, int32_t n, const kernels::PagedKv& kv, bool graph);
  // Whether single-token steps run the fused forms: the norms inside the products that
  // follow them, the residual adds and SwiGLU inside the products before them, and the
  // split merge inside decode attention.
  bool fused_decode_fits() const;
  bool fused_step(int32_t n_tokens) const { return n_tokens == 1 && fused_decode_; }
  // A fused single-row product: x normalized with `norm` first unless null, into y as
  // `output` (kernels::GemvOutput) says.
  kernels::GemvArgs fused_args(const DeviceMatrix& m, const void* x, const float* norm, void* y,
                               int32_t output) const;
  // The new rows of one layer from the host staging buffer into the host's blocks: the runs
  // of consecutive positions in one block numbered part, part + parts, ...
  void scatter_layer(const parley_cuda_batch& batch, const parley_cuda_kv& kv, int32_t layer,
                     int32_t part, int32_t parts) const;
  // scatter_layer for every layer as soon as its rows reach the host, by a few threads.
  void scatter_as_copied(const parley_cuda_batch& batch, const parley_cuda_kv& kv) const;

  // Makes `device` current before the members below create their streams and buffers.
  struct OnDevice {
    explicit OnDevice(int32_t device);
  };

  Shape s_;
  int32_t device_;
  bool use_graphs_;
  OnDevice on_device_;
  Stream stream_, copy_stream_;
  Event appended_, copied_;
  std::unique_ptr<Event[]> layer_copied_;  // [n_layers]: a layer's staging rows reached the host
  ResidentWeights w_;
  std::unique_ptr<Gemm> gemm_;
  DecodePlan plan_;
  bool fused_decode_ = false;  // PARLEY_CUDA_FUSED_DECODE=1 and fused_decode_fits()
  int32_t prefill_variant_ = kernels::kPrefillFourWarps;  // PARLEY_CUDA_PREFILL_ATTN

  // Activations for up to kMaxBatch rows.
  DeviceBuffer x_, xn_, qkv_, att_, proj_, gate_up_, act_, logits_, part_o_, part_md_;
  DeviceBuffer merge_counters_;  // [n_heads] ints, zero between launches of fused decode attention
  // What a step uploads (StepParams, tokens, block table) and what it brings back.
  PinnedBuffer step_host_, staging_host_, logits_host_;
  DeviceBuffer step_dev_, staging_dev_;
  uint32_t table_blocks_ = 0;
  size_t tokens_offset_ = 16, table_offset_ = 0, step_bytes_ = 0;
  uint64_t buffers_version_ = 1;  // bumped when a buffer a captured graph uses moves

  std::map<std::pair<int32_t, uint64_t>, std::unique_ptr<KvMirror>> mirrors_;  // (type, bytes)

  CudaGraph graph_;
  // What a captured step depends on besides its inputs.
  struct StepKey {
    int32_t kv_type = 0;
    bool write_host = true;        // the step copies its new rows to the host
    uint64_t buffers_version = 0;
    bool operator==(const StepKey&) const = default;
  };
  StepKey graph_key_;   // what the captured graph was made for
  StepKey warmed_key_;  // ran once eagerly: cuBLAS set up its kernels
  bool write_host_ = true;  // of the call being enqueued
};

}  // namespace parley::backend::cuda

// The only header host code includes to reach the kernels: one <Op>Args struct of pointers
// and sizes, and one launch_<op>() per kernel, each on a caller-given stream. Pointers are
// device pointers. Element types are kernels::ElemType values (F32 0, F16 1, BF16 2, Q8_0 3,
// Q4_1 4, Q5_1 5, Q4_0 6).
// Positions come from device memory (StepParams) so a captured CUDA graph replays any step.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/common/elem.cuh"
#include "kernels/common/paged_kv.cuh"

namespace parley::kernels {

// What changes from one step to the next, read by the kernels from device memory.
struct StepParams {
  int32_t start_pos;  // position of the first token of the call
  int32_t n_tokens;
};

// Weights of any file type -> the resident type (F32, F16 or BF16).
struct ConvertArgs {
  const void* src;  // [rows, cols] in src_type (block types: rows of cols / 32 blocks)
  int32_t src_type;
  void* dst;        // [rows, cols] in dst_type
  int32_t dst_type;
  int64_t rows;
  int64_t cols;
};
cudaError_t launch_convert(const ConvertArgs& args, cudaStream_t stream);

// x[t] = table[tokens[t]] as floats.
struct EmbedArgs {
  const void* table;      // [n_vocab, dim] in table_type
  int32_t table_type;
  const int32_t* tokens;  // [n]
  float* x;               // [n, dim]
  int32_t n;
  int32_t dim;
};
cudaError_t launch_embed(const EmbedArgs& args, cudaStream_t stream);

// With residual: x += residual (x written back), then out = x / rms(x) * weight.
struct RmsNormArgs {
  float* x;               // [rows, dim]
  const float* residual;  // [rows, dim] or null
  const float* weight;    // [dim]
  void* out;              // [rows, dim] in out_type; may equal x when out_type is F32
  int32_t out_type;
  int32_t rows;
  int32_t dim;
  float eps;
};
cudaError_t launch_rmsnorm(const RmsNormArgs& args, cudaStream_t stream);

// RoPE on the q and k heads of each row (in place), then K and V quantized (INT8, with their
// scales) or converted (F16) or copied (F32) into the paged blocks of positions
// start_pos + t, and the same bytes into staging for the host's copy of the blocks (none when
// staging.base is null).
struct RopeKvAppendArgs {
  float* qkv;  // [n, (n_heads + 2 n_kv_heads) head_dim]: q heads, k heads, v heads
  int32_t n_tokens;
  int32_t n_heads;
  int32_t layer;
  float theta;
  const StepParams* step;
  PagedKv kv;
  KvStaging staging;
};
cudaError_t launch_rope_kv_append(const RopeKvAppendArgs& args, cudaStream_t stream);

// Layouts of the tensor-core prefill attention, the same sums in each: blocks of 4 warps
// (64 query rows) or 8 (128 rows, each K/V tile serving twice the rows), and whether a block
// loads the next K/V tile while it computes on the current one ("pipelined").
enum PrefillVariant : int32_t {
  kPrefillFourWarps = 0,
  kPrefillEightWarps = 1,
  kPrefillFourWarpsPipelined = 2,
  kPrefillEightWarpsPipelined = 3,
};
inline constexpr int32_t kPrefillVariants = 4;

// Causal GQA attention of n new rows over the paged cache (FlashAttention-2 tiling: query
// rows of one head per block, K/V tiles in shared memory, online softmax). INT8 and F16
// caches run on the tensor cores (Q, K, V and the probabilities rounded to F16, F32 sums);
// F32 caches stay exact in F32.
struct AttnPrefillArgs {
  const float* q;   // row t at q + t * q_stride: [n_heads][head_dim], RoPE applied
  int32_t q_stride;
  void* out;        // [n, n_heads * head_dim] in out_type
  int32_t out_type;
  int32_t n_tokens;
  int32_t n_heads;
  int32_t layer;
  int32_t sliding_window;  // > 0: only the last sliding_window positions, itself included
  const StepParams* step;
  PagedKv kv;
  int32_t variant = kPrefillFourWarps;  // PrefillVariant: how the tensor-core kernel is laid out
};
cudaError_t launch_attn_prefill(const AttnPrefillArgs& args, cudaStream_t stream);

// Most splits of decode attention: attn_merge holds one weight per split.
inline constexpr int32_t kMaxDecodeSplits = 64;

// One new row (position start_pos) over the cache, split into n_splits (1..64) ranges of
// whole blocks; each block of threads serves the query heads of one KV head (up to 8 at a
// time) over one range and writes an unnormalized partial state {o, m, d}. Empty ranges
// write d = 0. With done_counters, the last block to finish for its query heads also merges
// their splits into out, as attn_merge would (no attn_merge launch needed).
struct AttnDecodeArgs {
  const float* q;   // [n_heads][head_dim], RoPE applied
  float* part_o;    // [n_splits][n_heads][head_dim]
  float* part_md;   // [n_splits][n_heads][2]: running max m, denominator d
  int32_t n_splits;
  int32_t n_heads;
  int32_t layer;
  int32_t sliding_window;
  const StepParams* step;
  PagedKv kv;
  // Zero before the first launch and zero again after every launch: one counter per query
  // head (n_heads ints). Null: partial states only.
  int32_t* done_counters = nullptr;
  void* out = nullptr;  // [n_heads * head_dim] in out_type, with done_counters
  int32_t out_type = kF32;
};
cudaError_t launch_attn_decode(const AttnDecodeArgs& args, cudaStream_t stream);

// Merges the partial states of the splits: out[h] = sum_s o_s e^(m_s - m) / sum_s d_s e^(m_s - m).
struct AttnMergeArgs {
  const float* part_o;
  const float* part_md;
  void* out;  // [n_heads * head_dim] in out_type
  int32_t out_type;
  int32_t n_splits;
  int32_t n_heads;
  int32_t head_dim;
};
cudaError_t launch_attn_merge(const AttnMergeArgs& args, cudaStream_t stream);

// out = silu(gate) * up, with gate and up side by side in each input row.
struct SwigluArgs {
  const float* gate_up;  // [n, 2 hidden]: gate [hidden], then up [hidden]
  void* out;             // [n, hidden] in out_type
  int32_t out_type;
  int32_t n;
  int32_t hidden;
};
cudaError_t launch_swiglu(const SwigluArgs& args, cudaStream_t stream);

// One-row product y[rows] = W[rows, cols] x[cols] (F32 sums) for F16 or BF16 W, cols a
// multiple of 8 and W and x 16-byte aligned (gemv_supports says whether the arguments fit).
// The decode step fuses its neighbours into it through `input` and `output`.
enum GemvInput : int32_t {
  kGemvPlain = 0,      // x: [cols] in type
  kGemvRmsNormed = 1,  // x: [cols] F32; the product reads x / rms(x) * norm_weight rounded to
                       // type, exactly what launch_rmsnorm writes for a row of up to 8192
};
enum GemvOutput : int32_t {
  kGemvStore = 0,   // y: F32 [rows]
  kGemvAdd = 1,     // y: F32 [rows], y += W x (the residual add)
  kGemvSwiglu = 2,  // y: [rows / 2] in type, y[j] = silu((W x)[j]) * (W x)[rows / 2 + j]
};
struct GemvArgs {
  const void* w;
  const void* x;
  void* y;
  int32_t type;       // kF16 or kBF16, of w (and of x when plain)
  int64_t rows;
  int64_t cols;
  int32_t min_warps;  // warps to run, in blocks of 8 (2 blocks per multiprocessor fill the device)
  int32_t input = kGemvPlain;
  const float* norm_weight = nullptr;  // kGemvRmsNormed: [cols], 16-byte aligned
  float eps = 0.0f;
  int32_t output = kGemvStore;
};
// Normalized inputs live in shared memory (2 bytes a column, under the 48 KiB a launch may
// take without opting in): up to this many columns.
inline constexpr int64_t kGemvMaxNormedCols = 16384;
bool gemv_supports(int32_t type, int64_t cols, const void* w, const void* x);
bool gemv_supports(const GemvArgs& args);
cudaError_t launch_gemv(const GemvArgs& args, cudaStream_t stream);

// Copy-on-write of whole blocks: dst[i] = src[i], block_bytes each.
struct KvBlockCopyArgs {
  const uint8_t* const* src;  // [n_blocks] device pointers (the array itself on the device)
  uint8_t* const* dst;        // [n_blocks]
  int32_t n_blocks;
  int64_t block_bytes;
};
cudaError_t launch_kv_block_copy(const KvBlockCopyArgs& args, cudaStream_t stream);

}  // namespace parley::kernels

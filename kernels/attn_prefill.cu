// Causal GQA attention of a batch of new rows over the paged cache, FlashAttention-2 style.
// INT8 and F16 caches go to the tensor-core kernel (attn_prefill_mma.cu). F32 caches, the
// exact reference path, stay in F32 here: a block holds 32 query rows of one head (4 threads
// per row, each a quarter of head_dim in registers), walks the visible positions one paged
// block (16 keys) at a time with K and V in shared memory, and keeps an online softmax per row.
#include "kernels/attn_prefill_mma.h"
#include "kernels/common/attention_window.cuh"
#include "kernels/common/elem.cuh"
#include "kernels/common/kv_load.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/head_dim_dispatch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kRows = 32;
constexpr int kLanesPerRow = 4;
constexpr int kThreads = kRows * kLanesPerRow;
constexpr int kTile = kKvBlockTokens;

template <int HD>
__global__ void __launch_bounds__(kThreads) attn_prefill_kernel(AttnPrefillArgs a) {
  constexpr int kDims = HD / kLanesPerRow;  // dims of a thread: d = kLanesPerRow * i + sub
  __shared__ float k_tile[kTile][HD];
  __shared__ float v_tile[kTile][HD];
  wait_for_producers();

  const PagedKv& kv = a.kv;
  const int sub = threadIdx.x % kLanesPerRow;
  const int t = blockIdx.x * kRows + threadIdx.x / kLanesPerRow;  // query row of this thread
  const bool active = t < a.n_tokens;
  const int h = blockIdx.y;
  const int kvh = h / (a.n_heads / kv.n_kv_heads);
  const int start = a.step->start_pos;
  const int kv_len = start + a.n_tokens;  // the cache already holds every row's own K/V
  const int pos = start + t;
  const int win = a.sliding_window;
  const int first = window_first_key(pos, win);

  float q[kDims], o[kDims];
  const float inv_sqrt = 1.0f / sqrtf(float(HD));
#pragma unroll
  for (int i = 0; i < kDims; ++i) {
    q[i] = active ? a.q[size_t(t) * a.q_stride + size_t(h) * HD + kLanesPerRow * i + sub] * inv_sqrt : 0.0f;
    o[i] = 0.0f;
  }
  float m = -INFINITY, d = 0.0f;

  const int row0 = blockIdx.x * kRows;
  const KeySpan keys = visible_keys(start + row0, start + min(a.n_tokens, row0 + kRows) - 1, win);
  for (int tile = keys.first / kTile * kTile; tile <= keys.last; tile += kTile) {
    __syncthreads();  // the previous tile is no longer read
    for (int idx = threadIdx.x; idx < kTile * HD; idx += kThreads) {
      const int j = idx / HD, dd = idx % HD;
      const int key = tile + j;
      // Slots past the cache's end hold stale bytes: zero, so 0 * garbage never makes NaN.
      const bool stored = key < kv_len;
      k_tile[j][dd] = stored ? load_kv(kv, false, a.layer, key, kvh, dd) : 0.0f;
      v_tile[j][dd] = stored ? load_kv(kv, true, a.layer, key, kvh, dd) : 0.0f;
    }
    __syncthreads();

    float s[kTile];
    float m_tile = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      float part = 0.0f;
#pragma unroll
      for (int i = 0; i < kDims; ++i) part += q[i] * k_tile[j][kLanesPerRow * i + sub];
      // The 4 lanes of a row are adjacent and aligned: xor 1 and 2 stay within them.
      part += __shfl_xor_sync(0xffffffffu, part, 1);
      part += __shfl_xor_sync(0xffffffffu, part, 2);
      const int key = tile + j;
      const bool visible = active && key <= pos && key >= first;
      s[j] = visible ? part : -INFINITY;
      m_tile = fmaxf(m_tile, s[j]);
    }
    if (m_tile == -INFINITY) continue;  // nothing visible to this row here (no barrier skipped)
    const float m_new = fmaxf(m, m_tile);
    const float alpha = softmax_rescale(m, m_new);
    d *= alpha;
#pragma unroll
    for (int i = 0; i < kDims; ++i) o[i] *= alpha;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const float p = s[j] == -INFINITY ? 0.0f : expf(s[j] - m_new);
      d += p;
#pragma unroll
      for (int i = 0; i < kDims; ++i) o[i] += p * v_tile[j][kLanesPerRow * i + sub];
    }
    m = m_new;
  }
  if (!active) return;
  const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
  const size_t out_row = size_t(t) * size_t(a.n_heads) * HD + size_t(h) * HD;
#pragma unroll
  for (int i = 0; i < kDims; ++i) store_elem(a.out, a.out_type, out_row + kLanesPerRow * i + sub, o[i] * inv_d);
}

template <int HD>
cudaError_t launch_hd(const AttnPrefillArgs& a, cudaStream_t stream) {
  const dim3 grid(unsigned((a.n_tokens + kRows - 1) / kRows), unsigned(a.n_heads));
  return launch_dependent(attn_prefill_kernel<HD>, grid, dim3(kThreads), 0, stream, a);
}

}  // namespace

cudaError_t launch_attn_prefill(const AttnPrefillArgs& args, cudaStream_t stream) {
  const PagedKv& kv = args.kv;
  if (args.n_tokens <= 0 || kv.n_kv_heads <= 0 || args.n_heads % kv.n_kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  if (kv.kv_type != kKvF32) return launch_attn_prefill_mma(args, stream);
  return with_head_dim(kv.head_dim, [&](auto hd) { return launch_hd<hd()>(args, stream); });
}

}  // namespace parley::kernels

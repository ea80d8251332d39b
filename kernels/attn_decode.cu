// Split-KV decode attention (flash-decoding): one block per (range of cache blocks, KV head)
// serves every query head of that KV head, so each K/V row is read once for the group. The
// range is walked one paged block (16 keys) at a time through shared memory; the block ends
// with an unnormalized partial state {o, m, d} per query head for attn_merge.
#include "kernels/common/kv_load.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kTile = kKvBlockTokens;

// Shared memory, in floats: q [group][hd], K and V tiles [16][hd + 1] (padded against bank
// conflicts), p [group][16], then alpha, m, d [group] each, then o [group][hd].
__host__ __device__ inline size_t decode_smem_floats(int group, int hd) {
  return size_t(group) * hd * 2 + size_t(2) * kTile * (hd + 1) + size_t(group) * kTile + size_t(group) * 3;
}

__global__ void __launch_bounds__(kThreads) attn_decode_kernel(AttnDecodeArgs a) {
  extern __shared__ float smem[];
  const PagedKv& kv = a.kv;
  const int hd = kv.head_dim, stride = hd + 1;
  const int group = a.n_heads / kv.n_kv_heads;
  const int split = blockIdx.x, kvh = blockIdx.y;
  float* q_s = smem;
  float* k_s = q_s + group * hd;
  float* v_s = k_s + kTile * stride;
  float* p_s = v_s + kTile * stride;
  float* alpha_s = p_s + group * kTile;
  float* m_s = alpha_s + group;
  float* d_s = m_s + group;
  float* o_s = d_s + group;

  const int len = a.step->start_pos + 1;  // the new row's own K/V is already in the cache
  const int first = a.sliding_window > 0 && len > a.sliding_window ? len - a.sliding_window : 0;
  const int tile_lo = first / kTile, tile_hi = (len + kTile - 1) / kTile;  // [lo, hi)
  const int per_split = (tile_hi - tile_lo + a.n_splits - 1) / a.n_splits;
  const int my_lo = tile_lo + split * per_split;
  const int my_hi = min(tile_hi, my_lo + per_split);

  const float inv_sqrt = 1.0f / sqrtf(float(hd));
  for (int idx = threadIdx.x; idx < group * hd; idx += kThreads) {
    q_s[idx] = a.q[size_t(kvh) * group * hd + idx] * inv_sqrt;  // heads kvh*group.. are adjacent
    o_s[idx] = 0.0f;
  }
  for (int g = threadIdx.x; g < group; g += kThreads) {
    m_s[g] = -INFINITY;
    d_s[g] = 0.0f;
  }
  __syncthreads();

  for (int tile = my_lo; tile < my_hi; ++tile) {
    const int base = tile * kTile;
    for (int idx = threadIdx.x; idx < kTile * hd; idx += kThreads) {
      const int j = idx / hd, dd = idx % hd;
      const bool stored = base + j < len;  // later slots hold stale bytes
      k_s[j * stride + dd] = stored ? load_kv(kv, false, a.layer, base + j, kvh, dd) : 0.0f;
      v_s[j * stride + dd] = stored ? load_kv(kv, true, a.layer, base + j, kvh, dd) : 0.0f;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < group * kTile; idx += kThreads) {
      const int g = idx / kTile, j = idx % kTile;
      const int key = base + j;
      float dot = 0.0f;
      for (int dd = 0; dd < hd; ++dd) dot += q_s[g * hd + dd] * k_s[j * stride + dd];
      p_s[idx] = key >= first && key < len ? dot : -INFINITY;
    }
    __syncthreads();
    for (int g = threadIdx.x; g < group; g += kThreads) {
      float m_tile = -INFINITY;
      for (int j = 0; j < kTile; ++j) m_tile = fmaxf(m_tile, p_s[g * kTile + j]);
      const float m_new = fmaxf(m_s[g], m_tile);
      float alpha = 1.0f, sum = 0.0f;
      if (m_tile != -INFINITY) alpha = softmax_rescale(m_s[g], m_new);
      for (int j = 0; j < kTile; ++j) {
        const float s = p_s[g * kTile + j];
        const float p = s == -INFINITY ? 0.0f : expf(s - m_new);
        p_s[g * kTile + j] = p;
        sum += p;
      }
      if (m_tile != -INFINITY) {
        d_s[g] = d_s[g] * alpha + sum;
        m_s[g] = m_new;
      }
      alpha_s[g] = alpha;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < group * hd; idx += kThreads) {
      const int g = idx / hd, dd = idx % hd;
      float acc = o_s[idx] * alpha_s[g];
      for (int j = 0; j < kTile; ++j) acc += p_s[g * kTile + j] * v_s[j * stride + dd];
      o_s[idx] = acc;
    }
    __syncthreads();  // before the next tile overwrites k_s, v_s and p_s
  }

  const size_t head0 = size_t(split) * a.n_heads + size_t(kvh) * group;
  for (int idx = threadIdx.x; idx < group * hd; idx += kThreads) a.part_o[head0 * hd + idx] = o_s[idx];
  for (int g = threadIdx.x; g < group; g += kThreads) {
    a.part_md[(head0 + g) * 2] = m_s[g];
    a.part_md[(head0 + g) * 2 + 1] = d_s[g];
  }
}

}  // namespace

cudaError_t prepare_attn_decode(int32_t group, int32_t head_dim) {
  if (group <= 0 || head_dim <= 0) return cudaErrorInvalidValue;
  const size_t bytes = decode_smem_floats(group, head_dim) * sizeof(float);
  if (bytes <= 48 * 1024) return cudaSuccess;  // the default limit
  return cudaFuncSetAttribute(attn_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(bytes));
}

cudaError_t launch_attn_decode(const AttnDecodeArgs& args, cudaStream_t stream) {
  const PagedKv& kv = args.kv;
  if (args.n_splits <= 0 || kv.n_kv_heads <= 0 || kv.head_dim <= 0 ||
      args.n_heads % kv.n_kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  const size_t bytes = decode_smem_floats(args.n_heads / kv.n_kv_heads, kv.head_dim) * sizeof(float);
  const dim3 grid(unsigned(args.n_splits), unsigned(kv.n_kv_heads));
  attn_decode_kernel<<<grid, kThreads, bytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

// Split-KV decode attention (flash-decoding): one block per (range of cache blocks, KV head,
// chunk of up to 8 of its query heads), so each K/V row is read once for those heads. Each
// warp walks its own paged blocks (16 keys) straight from global memory: for the scores a
// lane pair holds one key's row, for the values each lane holds a few dims of every key it
// sums. Warps keep private online-softmax states, merged through shared memory at the end
// into one unnormalized partial state {o, m, d} per query head for attn_merge, or for the
// block itself when it is the last of its heads' splits to finish.
#include "kernels/attn_split_merge.cuh"
#include "kernels/common/attention_window.cuh"
#include "kernels/common/kv_vec.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/head_dim_dispatch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTile = kKvBlockTokens;  // keys of one paged block

template <int HD, int T, int G>
__global__ void __launch_bounds__(kThreads) attn_decode_kernel(AttnDecodeArgs a) {
  constexpr int kEb = kKvElemBytes<T>;
  constexpr int kKeyDims = HD / 2;                // score pass: a lane pair per key
  constexpr int kValDims = HD >= 32 ? HD / 32 : 1;  // value pass: dims of one lane
  constexpr int kValCols = HD / kValDims;         // lanes across a value row
  constexpr int kValRows = 32 / kValCols;         // lanes down the keys (HD < 32)
  constexpr int kKeysPerLane = kTile / kValRows;
  __shared__ float q_s[G][HD];
  __shared__ float p_s[kWarps][G][kTile];
  __shared__ float md_s[kWarps][G][2];
  __shared__ float o_s[kWarps][G][HD];
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();

  const PagedKv& kv = a.kv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int split = blockIdx.x, kvh = blockIdx.y;
  const int head0 = kvh * (a.n_heads / kv.n_kv_heads) + blockIdx.z * G;

  const int len = a.step->start_pos + 1;  // the new row's own K/V is already in the cache
  const int first = window_first_key(len - 1, a.sliding_window);
  const int tile_lo = first / kTile, tile_hi = (len + kTile - 1) / kTile;  // [lo, hi)
  const int per_split = (tile_hi - tile_lo + a.n_splits - 1) / a.n_splits;
  const int my_lo = tile_lo + split * per_split;
  const int my_hi = min(tile_hi, my_lo + per_split);

  const float inv_sqrt = 1.0f / sqrtf(float(HD));
  for (int i = threadIdx.x; i < G * HD; i += kThreads) q_s[i / HD][i % HD] = a.q[size_t(head0) * HD + i] * inv_sqrt;
  __syncthreads();

  const int key = lane / 2, half = lane % 2;
  const int vcol = lane % kValCols, vrow = lane / kValCols;
  float m[G], d[G], o[G][kValDims];  // m is the same in every lane; d and o are lane partials
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    d[g] = 0.0f;
#pragma unroll
    for (int k = 0; k < kValDims; ++k) o[g][k] = 0.0f;
  }

  for (int tile = my_lo + warp; tile < my_hi; tile += kWarps) {
    const uint8_t* block = kv.blocks[tile];
    const int base = tile * kTile;
    // Every load of the tile first, so they are in flight together.
    float k_val[kKeyDims];
    load_kv_vec<kKeyDims, T>(block + kv.k_offset(a.layer, key, kvh) + half * kKeyDims * kEb, k_val);
    float v_val[kKeysPerLane][kValDims];
#pragma unroll
    for (int i = 0; i < kKeysPerLane; ++i) {
      const int j = vrow + i * kValRows;
      load_kv_vec<kValDims, T>(block + kv.v_offset(a.layer, j, kvh) + vcol * kValDims * kEb, v_val[i]);
      if (base + j >= len) {  // slots past the end hold stale bytes: 0 * NaN would be NaN
#pragma unroll
        for (int k = 0; k < kValDims; ++k) v_val[i][k] = 0.0f;
      }
    }
    float k_scale = 1.0f, v_scale = 1.0f;
    if constexpr (T == kKvInt8) {
      k_scale = __ldg(reinterpret_cast<const float*>(block + kv.k_scale_offset(a.layer, key, kvh)));
      v_scale = __ldg(reinterpret_cast<const float*>(block + kv.v_scale_offset(a.layer, key, kvh)));
    }
    const bool visible = base + key >= first && base + key < len;

#pragma unroll
    for (int g = 0; g < G; ++g) {
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < kKeyDims; ++i) dot += q_s[g][half * kKeyDims + i] * k_val[i];
      dot += __shfl_xor_sync(0xffffffffu, dot, 1);
      const float s = visible ? dot * k_scale : -INFINITY;
      float m_tile = s;
#pragma unroll
      for (int off = 2; off < 32; off *= 2) m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, off));
      float p = 0.0f;
      if (m_tile != -INFINITY) {  // the same in every lane
        const float m_new = fmaxf(m[g], m_tile);
        const float alpha = softmax_rescale(m[g], m_new);
        p = visible ? expf(s - m_new) : 0.0f;
        d[g] = d[g] * alpha + (half == 0 ? p : 0.0f);
#pragma unroll
        for (int k = 0; k < kValDims; ++k) o[g][k] *= alpha;
        m[g] = m_new;
      }
      if (half == 0) p_s[warp][g][key] = visible ? p * v_scale : 0.0f;
    }
    __syncwarp();
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int i = 0; i < kKeysPerLane; ++i) {
        const float p = p_s[warp][g][vrow + i * kValRows];
#pragma unroll
        for (int k = 0; k < kValDims; ++k) o[g][k] += p * v_val[i][k];
      }
    }
    __syncwarp();  // p_s is rewritten by the next tile
  }

  // The warp's state: d over all lanes, o over the lanes that took other keys of a dim.
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int off = 1; off < 32; off *= 2) d[g] += __shfl_xor_sync(0xffffffffu, d[g], off);
#pragma unroll
    for (int off = kValCols; off < 32; off *= 2) {
#pragma unroll
      for (int k = 0; k < kValDims; ++k) o[g][k] += __shfl_xor_sync(0xffffffffu, o[g][k], off);
    }
    if (lane == 0) {
      md_s[warp][g][0] = m[g];
      md_s[warp][g][1] = d[g];
    }
    if (vrow == 0) {
#pragma unroll
      for (int k = 0; k < kValDims; ++k) o_s[warp][g][vcol * kValDims + k] = o[g][k];
    }
  }
  __syncthreads();

  // The block's state per query head: the warps' states merged.
  for (int i = threadIdx.x; i < G * HD; i += kThreads) {
    const int g = i / HD, dd = i % HD;
    float m_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, md_s[w][g][0]);
    float o_all = 0.0f, d_all = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = softmax_rescale(md_s[w][g][0], m_all);
      o_all += o_s[w][g][dd] * f;
      d_all += md_s[w][g][1] * f;
    }
    const size_t head = size_t(split) * a.n_heads + head0 + g;
    a.part_o[head * HD + dd] = o_all;
    if (dd == 0) {
      a.part_md[head * 2] = m_all;
      a.part_md[head * 2 + 1] = d_all;
    }
  }

  if (a.done_counters != nullptr) {
    // The last block of the group's splits to get here merges them (the partial states of
    // the others are in L2 once their counts are).
    __shared__ SplitMergeScratch merge_s;
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      last = atomicAdd(a.done_counters + head0, 1) == a.n_splits - 1;
      if (last) atomicExch(a.done_counters + head0, 0);  // zero again for the next launch
    }
    __syncthreads();
    if (last) {
      __threadfence();
#pragma unroll 1
      for (int g = 0; g < G; ++g) {
        merge_splits<kThreads>(a.part_o, a.part_md, a.n_splits, a.n_heads, HD, head0 + g, a.out, a.out_type,
                               merge_s);
      }
    }
  }
}

template <int HD, int T>
cudaError_t launch_typed(const AttnDecodeArgs& a, int group, cudaStream_t stream) {
  // The widest chunk of query heads (a power of two up to 8) that divides the group.
  const int g = group % 8 == 0 ? 8 : group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
  const dim3 grid(unsigned(a.n_splits), unsigned(a.kv.n_kv_heads), unsigned(group / g));
  switch (g) {
    case 8: return launch_dependent(attn_decode_kernel<HD, T, 8>, grid, dim3(kThreads), 0, stream, a);
    case 4: return launch_dependent(attn_decode_kernel<HD, T, 4>, grid, dim3(kThreads), 0, stream, a);
    case 2: return launch_dependent(attn_decode_kernel<HD, T, 2>, grid, dim3(kThreads), 0, stream, a);
    default: return launch_dependent(attn_decode_kernel<HD, T, 1>, grid, dim3(kThreads), 0, stream, a);
  }
}

template <int HD>
cudaError_t launch_hd(const AttnDecodeArgs& a, int group, cudaStream_t stream) {
  switch (a.kv.kv_type) {
    case kKvInt8: return launch_typed<HD, kKvInt8>(a, group, stream);
    case kKvF16: return launch_typed<HD, kKvF16>(a, group, stream);
    case kKvF32: return launch_typed<HD, kKvF32>(a, group, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_attn_decode(const AttnDecodeArgs& args, cudaStream_t stream) {
  const PagedKv& kv = args.kv;
  if (args.n_splits <= 0 || args.n_splits > kMaxDecodeSplits || kv.n_kv_heads <= 0 ||
      args.n_heads % kv.n_kv_heads != 0 || (args.done_counters != nullptr && args.out == nullptr)) {
    return cudaErrorInvalidValue;
  }
  const int group = args.n_heads / kv.n_kv_heads;
  return with_head_dim(kv.head_dim, [&](auto hd) { return launch_hd<hd()>(args, group, stream); });
}

}  // namespace parley::kernels

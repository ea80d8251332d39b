// The merge of decode attention's split-KV partial states for one query head, run by a whole
// block: attn_merge launches it per head, and attn_decode runs it in the last block to finish
// a group of heads. The first warp derives one weight per split (at most 64, two per lane),
// then every thread sums its dims over the splits with those weights.
#pragma once

#include "kernels/common/elem.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/launch.h"

namespace parley::kernels {

// Shared memory of one merge, free again when merge_splits returns.
struct SplitMergeScratch {
  float weight[kMaxDecodeSplits];
  float inv;
};

// out[h] = sum_s o_s e^(m_s - m) / sum_s d_s e^(m_s - m). Every thread of the block calls it.
// The partial states are read through L2 (__ldcg): other blocks of the same kernel may have
// written them.
template <int kThreads>
__device__ __noinline__ void merge_splits(const float* part_o, const float* part_md, int n_splits, int n_heads,
                             int head_dim, int h, void* out, int32_t out_type, SplitMergeScratch& s) {
  if (threadIdx.x < 32) {
    float m[2], d[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int split = threadIdx.x + 32 * i;
      m[i] = -INFINITY;
      d[i] = 0.0f;
      if (split < n_splits) {
        const float* md = part_md + (size_t(split) * n_heads + h) * 2;
        d[i] = __ldcg(md + 1);
        if (d[i] > 0.0f) m[i] = __ldcg(md);  // empty splits take no part
      }
    }
    float m_all = fmaxf(m[0], m[1]);
    for (int off = 16; off > 0; off /= 2) m_all = fmaxf(m_all, __shfl_xor_sync(0xffffffffu, m_all, off));
    float denom = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int split = threadIdx.x + 32 * i;
      const float w = d[i] > 0.0f ? softmax_rescale(m[i], m_all) : 0.0f;
      if (split < n_splits) s.weight[split] = w;
      denom += d[i] * w;
    }
    for (int off = 16; off > 0; off /= 2) denom += __shfl_xor_sync(0xffffffffu, denom, off);
    if (threadIdx.x == 0) s.inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  }
  __syncthreads();
  for (int dd = threadIdx.x; dd < head_dim; dd += kThreads) {
    float acc = 0.0f;
    for (int split = 0; split < n_splits; ++split) {
      const float w = s.weight[split];
      if (w != 0.0f) acc += __ldcg(part_o + (size_t(split) * n_heads + h) * head_dim + dd) * w;
    }
    store_elem(out, out_type, size_t(h) * head_dim + dd, acc * s.inv);
  }
  __syncthreads();
}

}  // namespace parley::kernels

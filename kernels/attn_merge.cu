// Merges the split-KV partial states of each query head into its attention output: the
// first warp derives one weight per split (at most 64, two per lane), then every thread
// sums its dims over the splits with those weights.
#include "kernels/common/elem.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) attn_merge_kernel(AttnMergeArgs a) {
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  __shared__ float weight_s[kMaxDecodeSplits];
  __shared__ float inv_s;
  const int h = blockIdx.x;
  if (threadIdx.x < 32) {
    float m[2], d[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int s = threadIdx.x + 32 * i;
      m[i] = -INFINITY;
      d[i] = 0.0f;
      if (s < a.n_splits) {
        const float* md = a.part_md + (size_t(s) * a.n_heads + h) * 2;
        d[i] = md[1];
        if (d[i] > 0.0f) m[i] = md[0];  // empty splits take no part
      }
    }
    float m_all = fmaxf(m[0], m[1]);
    for (int off = 16; off > 0; off /= 2) m_all = fmaxf(m_all, __shfl_xor_sync(0xffffffffu, m_all, off));
    float denom = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int s = threadIdx.x + 32 * i;
      const float w = d[i] > 0.0f ? softmax_rescale(m[i], m_all) : 0.0f;
      if (s < a.n_splits) weight_s[s] = w;
      denom += d[i] * w;
    }
    for (int off = 16; off > 0; off /= 2) denom += __shfl_xor_sync(0xffffffffu, denom, off);
    if (threadIdx.x == 0) inv_s = denom > 0.0f ? 1.0f / denom : 0.0f;
  }
  __syncthreads();
  for (int dd = threadIdx.x; dd < a.head_dim; dd += kThreads) {
    float acc = 0.0f;
    for (int s = 0; s < a.n_splits; ++s) {
      const float w = weight_s[s];
      if (w != 0.0f) acc += a.part_o[(size_t(s) * a.n_heads + h) * a.head_dim + dd] * w;
    }
    store_elem(a.out, a.out_type, size_t(h) * a.head_dim + dd, acc * inv_s);
  }
}

}  // namespace

cudaError_t launch_attn_merge(const AttnMergeArgs& args, cudaStream_t stream) {
  if (args.n_splits <= 0 || args.n_splits > kMaxDecodeSplits || args.n_heads <= 0 || args.head_dim <= 0) {
    return cudaErrorInvalidValue;
  }
  return launch_dependent(attn_merge_kernel, dim3(unsigned(args.n_heads)), dim3(kThreads), 0, stream, args);
}

}  // namespace parley::kernels

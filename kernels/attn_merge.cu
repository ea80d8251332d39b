// Merges the split-KV partial states of each query head into its attention output.
#include "kernels/common/elem.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

__global__ void attn_merge_kernel(AttnMergeArgs a) {
  const int h = blockIdx.x;
  // Every thread derives the same weights; n_splits is small.
  float m = -INFINITY;
  for (int s = 0; s < a.n_splits; ++s) {
    const float* md = a.part_md + (size_t(s) * a.n_heads + h) * 2;
    if (md[1] > 0.0f) m = fmaxf(m, md[0]);
  }
  float denom = 0.0f;
  for (int s = 0; s < a.n_splits; ++s) {
    const float* md = a.part_md + (size_t(s) * a.n_heads + h) * 2;
    if (md[1] > 0.0f) denom += md[1] * softmax_rescale(md[0], m);
  }
  const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  for (int dd = threadIdx.x; dd < a.head_dim; dd += blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < a.n_splits; ++s) {
      const size_t head = size_t(s) * a.n_heads + h;
      const float* md = a.part_md + head * 2;
      if (md[1] > 0.0f) acc += a.part_o[head * a.head_dim + dd] * softmax_rescale(md[0], m);
    }
    store_elem(a.out, a.out_type, size_t(h) * a.head_dim + dd, acc * inv);
  }
}

}  // namespace

cudaError_t launch_attn_merge(const AttnMergeArgs& args, cudaStream_t stream) {
  if (args.n_splits <= 0 || args.n_heads <= 0 || args.head_dim <= 0) return cudaErrorInvalidValue;
  attn_merge_kernel<<<args.n_heads, 128, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

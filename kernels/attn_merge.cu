// Merges the split-KV partial states of each query head into its attention output, one
// block per head.
#include "kernels/attn_split_merge.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) attn_merge_kernel(AttnMergeArgs a) {
  __shared__ SplitMergeScratch scratch;
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  merge_splits<kThreads>(a.part_o, a.part_md, a.n_splits, a.n_heads, a.head_dim, int(blockIdx.x), a.out,
                         a.out_type, scratch);
}

}  // namespace

cudaError_t launch_attn_merge(const AttnMergeArgs& args, cudaStream_t stream) {
  if (args.n_splits <= 0 || args.n_splits > kMaxDecodeSplits || args.n_heads <= 0 || args.head_dim <= 0) {
    return cudaErrorInvalidValue;
  }
  return launch_dependent(attn_merge_kernel, dim3(unsigned(args.n_heads)), dim3(kThreads), 0, stream, args);
}

}  // namespace parley::kernels

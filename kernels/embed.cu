// Embedding gather: one block per token copies its row of the table, as floats.
#include "kernels/common/elem.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

__global__ void embed_kernel(EmbedArgs a) {
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  const int t = blockIdx.x;
  const size_t row = size_t(a.tokens[t]) * size_t(a.dim);
  float* x = a.x + size_t(t) * size_t(a.dim);
  for (int i = threadIdx.x; i < a.dim; i += blockDim.x) x[i] = load_elem(a.table, a.table_type, row + i);
}

}  // namespace

cudaError_t launch_embed(const EmbedArgs& args, cudaStream_t stream) {
  if (args.n <= 0 || args.dim <= 0) return cudaErrorInvalidValue;
  return launch_dependent(embed_kernel, dim3(unsigned(args.n)), dim3(256), 0, stream, args);
}

}  // namespace parley::kernels

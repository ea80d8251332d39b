// SwiGLU of the fused gate/up product, written in the type the down product reads.
#include "kernels/common/activation.cuh"
#include "kernels/common/elem.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

__global__ void swiglu_kernel(SwigluArgs a) {
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  const int64_t total = int64_t(a.n) * a.hidden;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.hidden, c = i % a.hidden;
    const float* row = a.gate_up + r * 2 * a.hidden;
    store_elem(a.out, a.out_type, size_t(i), swiglu_value(row[c], row[a.hidden + c]));
  }
}

}  // namespace

cudaError_t launch_swiglu(const SwigluArgs& args, cudaStream_t stream) {
  if (args.n <= 0 || args.hidden <= 0) return cudaErrorInvalidValue;
  const int64_t blocks = (int64_t(args.n) * args.hidden + 255) / 256;
  return launch_dependent(swiglu_kernel, dim3(unsigned(blocks < 65536 ? blocks : 65536)), dim3(256), 0,
                          stream, args);
}

}  // namespace parley::kernels

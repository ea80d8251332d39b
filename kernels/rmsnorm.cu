// RMSNorm, optionally after adding the residual branch into x: one block per row.
#include "kernels/common/elem.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kBlock = 256;

__global__ void rmsnorm_kernel(RmsNormArgs a) {
  __shared__ float scratch[32];
  const size_t base = size_t(blockIdx.x) * size_t(a.dim);
  float* x = a.x + base;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < a.dim; i += kBlock) {
    float v = x[i];
    if (a.residual) {
      v += a.residual[base + i];
      x[i] = v;  // each element is read and written by this thread alone
    }
    sum += v * v;
  }
  const float inv = rsqrtf(block_sum<kBlock>(sum, scratch) / float(a.dim) + a.eps);
  for (int i = threadIdx.x; i < a.dim; i += kBlock) {
    store_elem(a.out, a.out_type, base + i, x[i] * inv * a.weight[i]);
  }
}

}  // namespace

cudaError_t launch_rmsnorm(const RmsNormArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.dim <= 0) return cudaErrorInvalidValue;
  rmsnorm_kernel<<<args.rows, kBlock, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

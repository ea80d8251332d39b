// RMSNorm: out = x / sqrt(mean(x^2) + eps) * weight, one thread block per row.
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

template <int kBlock>
__global__ void rmsnorm_f32(RmsNormArgs a) {
  const int row = blockIdx.x;
  const float* x = a.x + static_cast<size_t>(row) * a.dim;
  float* out = a.out + static_cast<size_t>(row) * a.dim;

  float sum = 0.0f;
  for (int i = threadIdx.x; i < a.dim; i += kBlock) sum += x[i] * x[i];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);

  __shared__ float warp_sums[kBlock / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < kBlock / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) warp_sums[0] = sum;
  }
  __syncthreads();
  const float scale = rsqrtf(warp_sums[0] / a.dim + a.eps);
  for (int i = threadIdx.x; i < a.dim; i += kBlock) out[i] = x[i] * scale * a.weight[i];
}

}  // namespace

cudaError_t launch_rmsnorm(const RmsNormArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.dim <= 0) return cudaErrorInvalidValue;
  rmsnorm_f32<256><<<args.rows, 256, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

// Warp and block reductions (device code only).
#pragma once

#if defined(__CUDACC__)

namespace parley::kernels {

// x^2 + y^2 + z^2 + w^2 as explicit fused multiply-adds, so every kernel that sums squares
// of a row in float4 pieces (RMSNorm, the gemv's normalized input) rounds alike whatever
// the compiler would contract.
__device__ __forceinline__ float sum_of_squares(float4 v) {
  return fmaf(v.w, v.w, fmaf(v.z, v.z, fmaf(v.y, v.y, v.x * v.x)));
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole block (kBlock a multiple of 32, at most 1024); every thread gets it.
// scratch: 32 floats of shared memory, free again when this returns.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "block size");
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kBlock / 32 ? scratch[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32) v = warp_sum(v);
  if (threadIdx.x == 0) scratch[0] = v;
  __syncthreads();
  v = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return v;
}

}  // namespace parley::kernels

#endif  // __CUDACC__

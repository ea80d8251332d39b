// Loads and stores of activation and weight elements whose type is chosen at run time
// (device code only).
#pragma once

#include <stdint.h>

namespace parley::kernels {

// Types of weights as uploaded and of the activations that feed matrix products.
enum ElemType : int32_t {
  kF32 = 0, kF16 = 1, kBF16 = 2, kQ8_0 = 3, kQ4_1 = 4, kQ5_1 = 5, kQ4_0 = 6
};

}  // namespace parley::kernels

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace parley::kernels {

__device__ __forceinline__ float load_elem(const void* p, int32_t type, size_t i) {
  switch (type) {
    case kF16: return __half2float(static_cast<const __half*>(p)[i]);
    case kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store_elem(void* p, int32_t type, size_t i, float v) {
  switch (type) {
    case kF16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case kBF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace parley::kernels

#endif  // __CUDACC__

// One stored K or V element of the paged cache as a float (device code only).
#pragma once

#if defined(__CUDACC__)

#include <cuda_fp16.h>

#include "kernels/common/int8.cuh"
#include "kernels/common/paged_kv.cuh"

namespace parley::kernels {

// The d-th value of (layer, position key, kv head), K or V, dequantized.
__device__ __forceinline__ float load_kv(const PagedKv& kv, bool v, int layer, int key, int kvh, int d) {
  const uint8_t* block = kv.blocks[key / kKvBlockTokens];
  const int slot = key % kKvBlockTokens;
  const size_t off = v ? kv.v_offset(layer, slot, kvh) : kv.k_offset(layer, slot, kvh);
  switch (kv.kv_type) {
    case kKvInt8: {
      const size_t s_off = v ? kv.v_scale_offset(layer, slot, kvh) : kv.k_scale_offset(layer, slot, kvh);
      const float scale = *reinterpret_cast<const float*>(block + s_off);
      return dequantize_int8(reinterpret_cast<const int8_t*>(block + off)[d], scale);
    }
    case kKvF16: return __half2float(reinterpret_cast<const __half*>(block + off)[d]);
    default: return reinterpret_cast<const float*>(block + off)[d];
  }
}

}  // namespace parley::kernels

#endif  // __CUDACC__

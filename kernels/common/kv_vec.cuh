// Vector loads of stored K/V elements (INT8, F16 or F32, a compile-time type) as floats,
// in the widest aligned accesses the element count allows (device code only).
#pragma once

#if defined(__CUDACC__)

#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/common/paged_kv.cuh"

namespace parley::kernels {

template <int T>
inline constexpr int kKvElemBytes = T == kKvInt8 ? 1 : T == kKvF16 ? 2 : 4;

// The 4 / kKvElemBytes<T> values packed in one 32-bit word.
template <int T>
__device__ __forceinline__ void unpack_kv_word(uint32_t w, float* out) {
  if constexpr (T == kKvInt8) {
#pragma unroll
    for (int k = 0; k < 4; ++k) out[k] = float(int8_t(uint8_t(w >> (8 * k))));
  } else if constexpr (T == kKvF16) {
    out[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
    out[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
  } else {
    out[0] = __uint_as_float(w);
  }
}

// N consecutive elements at p (aligned to their size) as floats; INT8 values unscaled.
template <int N, int T>
__device__ __forceinline__ void load_kv_vec(const uint8_t* p, float (&out)[N]) {
  constexpr int kBytes = N * kKvElemBytes<T>;
  if constexpr (kBytes >= 16) {
#pragma unroll
    for (int c = 0; c < kBytes / 16; ++c) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + c);
      constexpr int kPerWord = 4 / kKvElemBytes<T>;
      unpack_kv_word<T>(u.x, out + (4 * c + 0) * kPerWord);
      unpack_kv_word<T>(u.y, out + (4 * c + 1) * kPerWord);
      unpack_kv_word<T>(u.z, out + (4 * c + 2) * kPerWord);
      unpack_kv_word<T>(u.w, out + (4 * c + 3) * kPerWord);
    }
  } else if constexpr (kBytes == 8) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    unpack_kv_word<T>(u.x, out);
    unpack_kv_word<T>(u.y, out + N / 2);
  } else if constexpr (kBytes == 4) {
    unpack_kv_word<T>(__ldg(reinterpret_cast<const unsigned int*>(p)), out);
  } else if constexpr (T == kKvInt8) {  // 1 or 2 values
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = float(int8_t(__ldg(reinterpret_cast<const signed char*>(p) + k)));
  } else {  // one F16 value
    static_assert(T == kKvF16 && N == 1);
    out[0] = __half2float(__ldg(reinterpret_cast<const __half*>(p)));
  }
}

}  // namespace parley::kernels

#endif  // __CUDACC__

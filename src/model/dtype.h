// Element types of weight tensors and their scalar conversions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace parley::model {

enum class DType : uint8_t { f32, f16, bf16, q8_0, q4_1, q5_1, q4_0 };

std::string_view dtype_name(DType t);

// Q8_0 (ggml): blocks of 32 values, an F16 scale d then 32 int8 q; value = d * q.
inline constexpr int kQ8BlockValues = 32;
struct Q8Block {
  uint16_t d;  // F16 bits
  int8_t q[kQ8BlockValues];
};
static_assert(sizeof(Q8Block) == 34);

// Q4_0 (ggml): blocks of 32 values, an F16 scale d, then 16 bytes whose low nibbles are values
// 0-15 and high nibbles 16-31; value = d * (nibble - 8).
inline constexpr int kQ4BlockBytes = 16;
struct Q4_0Block {
  uint16_t d;  // F16 bits
  uint8_t q[kQ4BlockBytes];
};
static_assert(sizeof(Q4_0Block) == 18);

// Q4_1 (ggml): as Q4_0 with an F16 minimum m after d; value = d * code + m, codes 0-15.
struct Q4_1Block {
  uint16_t d;  // F16 bits
  uint16_t m;  // F16 bits
  uint8_t q[kQ4BlockBytes];
};
static_assert(sizeof(Q4_1Block) == 20);

// Q5_1 (ggml): as Q4_1 with a fifth bit per code, bit j of the little-endian word qh for
// value j; value = d * code + m, codes 0-31.
struct Q5_1Block {
  uint16_t d;  // F16 bits
  uint16_t m;  // F16 bits
  uint8_t qh[4];
  uint8_t q[kQ4BlockBytes];
};
static_assert(sizeof(Q5_1Block) == 24);

// Whether t is one of ggml's block types (rows of whole blocks of 32 values).
constexpr bool is_blocked(DType t) {
  return t == DType::q8_0 || t == DType::q4_0 || t == DType::q4_1 || t == DType::q5_1;
}

// Whether t's blocks have a minimum (value = d * code + m).
constexpr bool has_minimums(DType t) { return t == DType::q4_1 || t == DType::q5_1; }

// Bytes of a row of `n` values; n must be a multiple of 32 for the block types (checked by
// the readers).
constexpr size_t row_bytes(DType t, size_t n) {
  switch (t) {
    case DType::f32: return n * 4;
    case DType::f16: return n * 2;
    case DType::bf16: return n * 2;
    case DType::q8_0: return n / kQ8BlockValues * sizeof(Q8Block);
    case DType::q4_0: return n / kQ8BlockValues * sizeof(Q4_0Block);
    case DType::q4_1: return n / kQ8BlockValues * sizeof(Q4_1Block);
    case DType::q5_1: return n / kQ8BlockValues * sizeof(Q5_1Block);
  }
  return 0;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest even, as every F16 converter (numpy, ggml, F16C) does.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {                                  // below the smallest normal F16
    if (abs < 0x33000000u) return uint16_t(sign);           // below half the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

// dst[n] = the n values of type t at src (no alignment needed); n a multiple of 32 for the
// block types. Q4_1 and Q5_1 as ggml computes them: d * code + m; Q4_0 as d * (nibble - 8).
void dequantize(DType t, const std::byte* src, size_t n, float* dst);

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

}  // namespace parley::model

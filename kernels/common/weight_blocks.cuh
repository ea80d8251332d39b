// Values of ggml weight blocks as the model hands them over (model/dtype.h), read byte by
// byte (a row of blocks promises no alignment): used by the conversion to the resident type
// on the device, and checked on the CPU.
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

inline constexpr int kQ8_0BlockBytes = 34;  // F16 scale, 32 int8 codes
inline constexpr int kQ4_0BlockBytes = 18;  // F16 scale, 16 bytes of nibbles
inline constexpr int kQ4_1BlockBytes = 20;  // F16 scale, F16 minimum, 16 bytes of nibbles
inline constexpr int kQ5_1BlockBytes = 24;  // as Q4_1, with a 32-bit word of fifth bits

PARLEY_HD float f16_bits_to_float(uint32_t h) {
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float v;
  if (exponent == 0x1fu) {
    v = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    v = ldexpf(float(mantissa), -24);  // subnormal
  } else {
    v = ldexpf(float(mantissa | 0x400u), int(exponent) - 25);
  }
  return (h & 0x8000u) ? -v : v;
}

PARLEY_HD float f16_at(const uint8_t* p) { return f16_bits_to_float(p[0] | uint32_t(p[1]) << 8); }

// Q8_0: value = d * code.
PARLEY_HD float q8_0_value(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / 32) * kQ8_0BlockBytes;
  return f16_at(block) * float(static_cast<int8_t>(block[2 + c % 32]));
}

// Q4_0: value = d * (code - 8); values j and j + 16 in the low and high nibble of byte j.
PARLEY_HD float q4_0_value(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / 32) * kQ4_0BlockBytes;
  const int j = int(c % 32);
  const uint8_t byte = block[2 + j % 16];
  const int code = j < 16 ? byte & 0x0f : byte >> 4;
  return f16_at(block) * float(code - 8);
}

// Q4_1: value = d * code + m; values j and j + 16 in the low and high nibble of byte j.
PARLEY_HD float q4_1_value(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / 32) * kQ4_1BlockBytes;
  const int j = int(c % 32);
  const uint8_t byte = block[4 + j % 16];
  const int code = j < 16 ? byte & 0x0f : byte >> 4;
  return f16_at(block) * float(code) + f16_at(block + 2);
}

// Q5_1: as Q4_1, the fifth bit of value j bit j of the little-endian word after m.
PARLEY_HD float q5_1_value(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / 32) * kQ5_1BlockBytes;
  const int j = int(c % 32);
  const uint8_t byte = block[8 + j % 16];
  const int fifth = (block[4 + j / 8] >> (j % 8)) & 1;
  const int code = (j < 16 ? byte & 0x0f : byte >> 4) | fifth << 4;
  return f16_at(block) * float(code) + f16_at(block + 2);
}

}  // namespace parley::kernels

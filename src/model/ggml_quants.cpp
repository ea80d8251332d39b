#include "model/ggml_quants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace parley::model {

namespace {

constexpr uint32_t kQK = 256;  // values in a K-type super-block

// ggml type ids and block sizes (ggml-common.h's block_* structs).
// (Q4_0, Q4_1 and Q5_1, types 2, 3 and 7, are held as they are: gguf_reader.cpp.)
constexpr std::array<GgmlBlockType, 4> kTypes{{
    {6, "Q5_0", 32, 22, DType::q5_1, true},
    {12, "Q4_K", kQK, 144, DType::q4_1, false},
    {13, "Q5_K", kQK, 176, DType::q5_1, false},
    {14, "Q6_K", kQK, 210, DType::q8_0, false},
}};

uint16_t u16_at(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float f16_at(const std::byte* p) { return f16_to_f32(u16_at(p)); }

const uint8_t* bytes_at(const std::byte* p) { return reinterpret_cast<const uint8_t*>(p); }

// Whether `bits`, `value` rounded to F16, is in range: not an infinity or NaN that a finite
// value became.
bool fits_f16(uint16_t bits, float value) {
  return (bits & 0x7c00u) != 0x7c00u || !std::isfinite(value);
}

// Q5_0: d, a 32-bit word of fifth bits (bit j for value j), then 16 bytes whose low nibbles
// hold the low bits of values 0-15 and high nibbles of 16-31; value = d * (code - 16). -> a
// Q5_1 block with the same d, qh and nibbles and m = -16d, exact (a power of two apart) unless
// it overflows F16 (false).
bool q5_0_to_q5_1(const std::byte* b, Q5_1Block& out) {
  out.d = u16_at(b);
  const float m = -16.0f * f16_to_f32(out.d);
  out.m = f32_to_f16(m);
  std::memcpy(out.qh, b + 2, sizeof out.qh);
  std::memcpy(out.q, b + 6, sizeof out.q);
  return fits_f16(out.m, m);
}

// The 6-bit scale and minimum of sub-block j (0-7) of a Q4_K / Q5_K super-block: 12 bytes
// hold sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums), and 4-7
// in the nibbles of bytes 8-11 with their top two bits in the spare bits of bytes 0-7.
void k_scale_min(int j, const uint8_t* s, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = uint8_t((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
    min = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q4_K: d, dmin, 12 scale bytes, then 128 bytes of nibbles, two sub-blocks per 32 bytes (low
// nibbles the first). value = d * scale * code - dmin * min. -> eight Q4_1 blocks, one per
// sub-block: its scale d * scale and minimum -dmin * min rounded to F16, the codes moved to
// Q4_1's order (values j and j + 16 in byte j). Q5_K puts 32 bytes of fifth bits before the
// nibbles, bit j of byte l for value l of sub-block j; -> eight Q5_1 blocks, the fifth bits
// gathered into each block's 32-bit word (bit l for value l). False when a scale or minimum
// overflows F16.
template <class Block>
bool k_to_blocks_with_minimums(const std::byte* b, Block* out) {
  constexpr bool kFifthBits = std::is_same_v<Block, Q5_1Block>;
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = bytes_at(b + 4);
  const uint8_t* qh = bytes_at(b + 16);
  const uint8_t* qs = bytes_at(b + (kFifthBits ? 48 : 16));
  bool in_range = true;
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t scale, min;
    k_scale_min(sub, scales, scale, min);
    const float ds = d * float(scale), dm = -(dmin * float(min));
    Block& o = out[sub];
    o.d = f32_to_f16(ds);
    o.m = f32_to_f16(dm);
    in_range = in_range && fits_f16(o.d, ds) && fits_f16(o.m, dm);
    const uint8_t* q = qs + 32 * (sub / 2);
    const int shift = 4 * (sub % 2);
    for (int j = 0; j < 16; ++j) {
      o.q[j] = uint8_t(((q[j] >> shift) & 0x0f) | (((q[j + 16] >> shift) & 0x0f) << 4));
    }
    if constexpr (kFifthBits) {
      uint32_t fifth = 0;
      for (int l = 0; l < 32; ++l) fifth |= uint32_t((qh[l] >> sub) & 1) << l;
      std::memcpy(o.qh, &fifth, 4);
    }
  }
  return in_range;
}

// Q6_K: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales (one per 16
// values), d. Each half of 128 values takes 64 low bytes and 32 high bytes: value 32k + l
// (k = 0-3) of the half has its low nibble in byte l (k even) or l + 32 (k odd), low nibble
// for k < 2 and high for k >= 2, and its top two bits at bit 2k of high byte l.
// value = d * scale * (code - 32).
void q6_k_values(const std::byte* b, float* y) {
  const uint8_t* ql = bytes_at(b);
  const uint8_t* qh = bytes_at(b + 128);
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      const uint8_t* low = ql + 64 * h + 32 * (k % 2);
      const uint8_t* high = qh + 32 * h;
      const int low_shift = k < 2 ? 0 : 4;
      for (int part = 0; part < 2; ++part) {  // 16 values per scale
        const float ds = d * float(sc[8 * h + 2 * k + part]);
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int code = ((low[l] >> low_shift) & 0x0f) | (((high[l] >> (2 * k)) & 3) << 4);
          y[128 * h + 32 * k + l] = ds * float(code - 32);
        }
      }
    }
  }
}

// 32 values -> a Q8_0 block whose stored F16 scale is also the one quantized with, so no
// value moves by more than half a step of the scale the reader sees. False when finite values
// need a scale beyond F16's range (beyond 127 * 65504): an infinite one would make them NaN.
bool quantize_q8_0(const float* x, Q8Block& out) {
  float lanes[8] = {};  // eight running maxima instead of one chain of 32
  float probe[8] = {};  // x * 0 is NaN for a NaN or an infinity, else 0
  for (int i = 0; i < kQ8BlockValues; i += 8) {
    for (int k = 0; k < 8; ++k) {
      lanes[k] = std::max(lanes[k], std::fabs(x[i + k]));
      probe[k] += x[i + k] * 0.0f;
    }
  }
  const float amax = *std::max_element(lanes, lanes + 8);
  // F16 may round the scale down, among its subnormals by so much that codes would pass
  // 127; the next F16 value up keeps every code within +-127.
  uint16_t bits = f32_to_f16(amax / 127.0f);
  if (f16_to_f32(bits) * 127.0f < amax && bits < 0x7c00) ++bits;
  out.d = bits;
  if (!fits_f16(bits, amax)) return false;
  const float d = f16_to_f32(bits);
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  if (std::any_of(probe, probe + 8, [](float p) { return p != 0.0f; })) {
    // A broken weight: converting NaN to an integer is undefined, so such values become 0.
    for (int i = 0; i < kQ8BlockValues; ++i) {
      out.q[i] = std::isfinite(x[i] * id) ? int8_t(std::lround(x[i] * id)) : int8_t(0);
    }
    return true;
  }
  // Adding 1.5 * 2^23 rounds to an integer (half to even) in a way that vectorizes, where
  // lround is a call per value.
  constexpr float kRound = 12582912.0f;
  for (int i = 0; i < kQ8BlockValues; ++i) out.q[i] = int8_t(int((x[i] * id + kRound) - kRound));
  return true;
}

}  // namespace

const GgmlBlockType* convertible_block_type(uint32_t ggml_type) {
  for (const GgmlBlockType& t : kTypes) {
    if (t.ggml_type == ggml_type) return &t;
  }
  return nullptr;
}

std::string_view convertible_block_type_names() { return "Q5_0, Q4_K, Q5_K and Q6_K"; }

bool convert_row(const GgmlBlockType& type, const std::byte* src, size_t n_values,
                 std::byte* dst_bytes) {
  float values[kQK];
  auto* dst = reinterpret_cast<Q8Block*>(dst_bytes);
  for (size_t b = 0; b < n_values / type.block_values; ++b, src += type.block_bytes) {
    switch (type.ggml_type) {
      case 6:
        if (!q5_0_to_q5_1(src, reinterpret_cast<Q5_1Block*>(dst_bytes)[b])) return false;
        continue;
      case 12:
        if (!k_to_blocks_with_minimums(src, reinterpret_cast<Q4_1Block*>(dst_bytes) + 8 * b)) {
          return false;
        }
        continue;
      case 13:
        if (!k_to_blocks_with_minimums(src, reinterpret_cast<Q5_1Block*>(dst_bytes) + 8 * b)) {
          return false;
        }
        continue;
      case 14: q6_k_values(src, values); break;
      default: return false;
    }
    for (uint32_t i = 0; i < type.block_values; i += kQ8BlockValues) {
      if (!quantize_q8_0(values + i, *dst++)) return false;
    }
  }
  return true;
}

}  // namespace parley::model

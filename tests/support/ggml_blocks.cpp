#include "support/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "model/dtype.h"

namespace parley::test {

namespace {

using model::f16_to_f32;
using model::f32_to_f16;

// An F16 scale as stored and as read back.
struct Scale {
  uint16_t bits;
  float value;
};

Scale f16_scale(float x) {
  const uint16_t bits = f32_to_f16(x);
  return {bits, f16_to_f32(bits)};
}

int code_of(float x, float step, int lo, int hi) {
  if (step == 0.0f) return std::clamp(0, lo, hi);
  return std::clamp(int(std::lround(x / step)), lo, hi);
}

void put_u16(std::string& out, uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); }

void put_bytes(std::string& out, const uint8_t* p, size_t n) {
  out.append(reinterpret_cast<const char*>(p), n);
}

float amax_of(const float* x, int n) {
  float a = 0.0f;
  for (int i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

// Q4_0 / Q5_0: F16 d; codes c in [-2^(bits-1), 2^(bits-1)); value = d * c. Value j's code
// is in byte j % 16 of qs, the low nibble for j < 16, the high one for j >= 16; Q5_0's fifth
// bits form a little-endian 32-bit word after d, bit j for value j.
void symmetric_block(const float* x, int bits, std::string& out, float* values) {
  const int half = 1 << (bits - 1);
  const Scale d = f16_scale(amax_of(x, 32) / float(half));
  uint8_t qs[16] = {};
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) {
    const int c = code_of(x[j], d.value, -half, half - 1);
    values[j] = d.value * float(c);
    const unsigned u = unsigned(c + half);
    qs[j % 16] |= uint8_t((u & 0x0f) << (j < 16 ? 0 : 4));
    qh |= ((u >> 4) & 1u) << j;
  }
  put_u16(out, d.bits);
  if (bits == 5) out.append(reinterpret_cast<const char*>(&qh), 4);
  put_bytes(out, qs, 16);
}

// Q4_1 / Q5_1: F16 d and m; codes c in [0, 2^bits); value = d * c + m; the same places.
void offset_block(const float* x, int bits, std::string& out, float* values) {
  const int top = (1 << bits) - 1;
  const float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const Scale d = f16_scale((hi - lo) / float(top)), m = f16_scale(lo);
  uint8_t qs[16] = {};
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) {
    const int c = code_of(x[j] - m.value, d.value, 0, top);
    values[j] = float(c) * d.value + m.value;
    qs[j % 16] |= uint8_t((c & 0x0f) << (j < 16 ? 0 : 4));
    qh |= uint32_t((c >> 4) & 1) << j;
  }
  put_u16(out, d.bits);
  put_u16(out, m.bits);
  if (bits == 5) out.append(reinterpret_cast<const char*>(&qh), 4);
  put_bytes(out, qs, 16);
}

// Q4_K / Q5_K: 8 sub-blocks of 32 values with a 6-bit scale s and minimum m each; F16 d and
// dmin for the super-block; value = d*s*c - dmin*m. The 12 scale bytes: sub-block j < 4 has
// s in the low 6 bits of byte j and m in those of byte j + 4; j >= 4 has the low nibbles of
// s and m in the low and high nibble of byte j + 4, and their top 2 bits in the top bits of
// bytes j - 4 (s) and j (m). Codes: sub-blocks 2i and 2i+1 share bytes 32i..32i+31 of qs
// (low nibble, high nibble); Q5_K's fifth bits come first, 32 bytes: bit j of byte l for
// value l of sub-block j.
void k_block(const float* x, int bits, std::string& out, float* values) {
  const int top = (1 << bits) - 1;
  float scale[8], minimum[8];
  for (int j = 0; j < 8; ++j) {
    const float* s = x + 32 * j;
    const float lo = std::min(0.0f, *std::min_element(s, s + 32));
    const float hi = *std::max_element(s, s + 32);
    scale[j] = (hi - lo) / float(top);
    minimum[j] = -lo;
  }
  const Scale d = f16_scale(*std::max_element(scale, scale + 8) / 63.0f);
  const Scale dmin = f16_scale(*std::max_element(minimum, minimum + 8) / 63.0f);
  uint8_t sc_bytes[12] = {}, qh[32] = {}, qs[128] = {};
  for (int j = 0; j < 8; ++j) {
    const int s = code_of(scale[j], d.value, 0, 63), m = code_of(minimum[j], dmin.value, 0, 63);
    if (j < 4) {
      sc_bytes[j] |= uint8_t(s);
      sc_bytes[j + 4] |= uint8_t(m);
    } else {
      sc_bytes[j + 4] = uint8_t((s & 0x0f) | ((m & 0x0f) << 4));
      sc_bytes[j - 4] |= uint8_t((s >> 4) << 6);
      sc_bytes[j] |= uint8_t((m >> 4) << 6);
    }
    const float ds = d.value * float(s), dm = dmin.value * float(m);
    for (int l = 0; l < 32; ++l) {
      const int c = code_of(x[32 * j + l] + dm, ds, 0, top);
      values[32 * j + l] = ds * float(c) - dm;
      qs[32 * (j / 2) + l] |= uint8_t((c & 0x0f) << (j % 2 ? 4 : 0));
      qh[l] |= uint8_t(((c >> 4) & 1) << j);
    }
  }
  put_u16(out, d.bits);
  put_u16(out, dmin.bits);
  put_bytes(out, sc_bytes, 12);
  if (bits == 5) put_bytes(out, qh, 32);
  put_bytes(out, qs, 128);
}

// Q6_K: 16 sub-blocks of 16 values with a signed 8-bit scale each, F16 d last; codes c in
// [0, 64); value = d * scale * (c - 32). For value i of half h (i = 32k + l, k = 0..3,
// l = 0..31): the low nibble of c is in ql[64h + l + 32(k % 2)], low for k < 2 and high
// otherwise; its top 2 bits at bit 2k of qh[32h + l]. Odd sub-blocks get negative scales,
// so that the sign is exercised.
void q6_k_block(const float* x, std::string& out, float* values) {
  float want[16];
  for (int j = 0; j < 16; ++j) want[j] = amax_of(x + 16 * j, 16) / 32.0f;
  const Scale d = f16_scale(*std::max_element(want, want + 16) / 127.0f);
  int8_t sc[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = int8_t(code_of(want[j], d.value, 0, 127) * (j % 2 ? -1 : 1));
  }
  uint8_t ql[128] = {}, qh[64] = {};
  for (int i = 0; i < 256; ++i) {
    const float step = d.value * float(sc[i / 16]);
    const int c = code_of(x[i], step, -32, 31) + 32;
    values[i] = step * float(c - 32);
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    ql[64 * h + l + 32 * (k % 2)] |= uint8_t((c & 0x0f) << (k < 2 ? 0 : 4));
    qh[32 * h + l] |= uint8_t((c >> 4) << (2 * k));
  }
  put_bytes(out, ql, 128);
  put_bytes(out, qh, 64);
  out.append(reinterpret_cast<const char*>(sc), 16);
  put_u16(out, d.bits);
}

}  // namespace

std::string ggml_block_type_name(uint32_t type) {
  switch (type) {
    case ggml_block_type::Q4_0: return "Q4_0";
    case ggml_block_type::Q4_1: return "Q4_1";
    case ggml_block_type::Q5_0: return "Q5_0";
    case ggml_block_type::Q5_1: return "Q5_1";
    case ggml_block_type::Q4_K: return "Q4_K";
    case ggml_block_type::Q5_K: return "Q5_K";
    case ggml_block_type::Q6_K: return "Q6_K";
  }
  throw std::invalid_argument("not a ggml block type: " + std::to_string(type));
}

uint32_t ggml_block_values(uint32_t type) {
  return type == ggml_block_type::Q4_K || type == ggml_block_type::Q5_K ||
                 type == ggml_block_type::Q6_K
             ? 256
             : 32;
}

GgmlBlocks encode_ggml_blocks(uint32_t type, std::span<const float> values) {
  const uint32_t n = ggml_block_values(type);
  if (values.size() % n != 0) {
    throw std::invalid_argument(ggml_block_type_name(type) + " needs whole blocks of " +
                                std::to_string(n) + " values");
  }
  GgmlBlocks out;
  out.values.resize(values.size());
  for (size_t b = 0; b < values.size(); b += n) {
    const float* x = values.data() + b;
    float* y = out.values.data() + b;
    switch (type) {
      case ggml_block_type::Q4_0: symmetric_block(x, 4, out.bytes, y); break;
      case ggml_block_type::Q5_0: symmetric_block(x, 5, out.bytes, y); break;
      case ggml_block_type::Q4_1: offset_block(x, 4, out.bytes, y); break;
      case ggml_block_type::Q5_1: offset_block(x, 5, out.bytes, y); break;
      case ggml_block_type::Q4_K: k_block(x, 4, out.bytes, y); break;
      case ggml_block_type::Q5_K: k_block(x, 5, out.bytes, y); break;
      case ggml_block_type::Q6_K: q6_k_block(x, out.bytes, y); break;
    }
  }
  return out;
}

}  // namespace parley::test

#include "support/tensor_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace parley::test {

using model::DType;

namespace {

void append16(std::string& out, uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); }

void encode_q8_0(std::string& out, std::span<const float> x) {
  if (x.size() % model::kQ8BlockValues != 0)
    throw std::invalid_argument("Q8_0 needs multiples of 32 values");
  for (size_t b = 0; b < x.size(); b += model::kQ8BlockValues) {
    float amax = 0.0f;
    for (int j = 0; j < model::kQ8BlockValues; ++j)
      amax = std::max(amax, std::fabs(x[b + size_t(j)]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    model::Q8Block blk{};
    blk.d = model::f32_to_f16(d);
    for (int j = 0; j < model::kQ8BlockValues; ++j)
      blk.q[j] = int8_t(std::roundf(x[b + size_t(j)] * id));
    out.append(reinterpret_cast<const char*>(&blk), sizeof blk);
  }
}

// ggml's quantize_row_q4_0_ref: per 32 values, m = the value of largest magnitude (the first
// such), d = m / -8, code = min(15, int(x / d + 8.5)); d stored F16.
void encode_q4_0(std::string& out, std::span<const float> x) {
  if (x.size() % model::kQ8BlockValues != 0)
    throw std::invalid_argument("Q4_0 needs multiples of 32 values");
  for (size_t b = 0; b < x.size(); b += model::kQ8BlockValues) {
    const auto block = x.subspan(b, model::kQ8BlockValues);
    float amax = 0.0f, max = 0.0f;
    for (float v : block) {
      if (std::fabs(v) > amax) amax = std::fabs(v), max = v;
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    model::Q4_0Block blk{};
    blk.d = model::f32_to_f16(d);
    const auto code = [&](size_t j) { return std::min(15, int(block[j] * id + 8.5f)); };
    for (size_t j = 0; j < 16; ++j) blk.q[j] = uint8_t(code(j) | code(j + 16) << 4);
    out.append(reinterpret_cast<const char*>(&blk), sizeof blk);
  }
}

// ggml's quantize_row_q4_1_ref and quantize_row_q5_1_ref: per 32 values
// d = (max - min) / (2^bits - 1), m = min, code = min(2^bits - 1, int((x - min) / d + 0.5));
// d and m stored F16; Q5_1's fifth bits in a 32-bit word, bit j for value j.
template <class Block, int kBits>
void encode_with_minimum(std::string& out, std::span<const float> x) {
  if (x.size() % model::kQ8BlockValues != 0)
    throw std::invalid_argument("Q4_1 and Q5_1 need multiples of 32 values");
  constexpr int kMax = (1 << kBits) - 1;
  for (size_t b = 0; b < x.size(); b += model::kQ8BlockValues) {
    const auto block = x.subspan(b, model::kQ8BlockValues);
    const float lo = *std::min_element(block.begin(), block.end());
    const float hi = *std::max_element(block.begin(), block.end());
    const float d = (hi - lo) / float(kMax);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    Block blk{};
    blk.d = model::f32_to_f16(d);
    blk.m = model::f32_to_f16(lo);
    const auto code = [&](size_t j) { return std::min(kMax, int((block[j] - lo) * id + 0.5f)); };
    uint32_t fifth = 0;
    for (size_t j = 0; j < 16; ++j) {
      blk.q[j] = uint8_t((code(j) & 15) | (code(j + 16) & 15) << 4);
      fifth |= uint32_t(code(j) >> 4) << j | uint32_t(code(j + 16) >> 4) << (j + 16);
    }
    if constexpr (kBits == 5) std::memcpy(blk.qh, &fifth, 4);
    out.append(reinterpret_cast<const char*>(&blk), sizeof blk);
  }
}

}  // namespace

std::string encode_tensor(DType dtype, std::span<const float> values) {
  std::string out;
  switch (dtype) {
    case DType::f32:
      out.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
      break;
    case DType::f16:
      for (float v : values) append16(out, model::f32_to_f16(v));
      break;
    case DType::bf16:
      for (float v : values) append16(out, model::f32_to_bf16(v));
      break;
    case DType::q8_0:
      encode_q8_0(out, values);
      break;
    case DType::q4_0:
      encode_q4_0(out, values);
      break;
    case DType::q4_1:
      encode_with_minimum<model::Q4_1Block, 4>(out, values);
      break;
    case DType::q5_1:
      encode_with_minimum<model::Q5_1Block, 5>(out, values);
      break;
  }
  return out;
}

std::vector<float> decode_tensor(DType dtype, const std::byte* data, size_t n) {
  std::vector<float> out(n);
  switch (dtype) {
    case DType::f32:
      std::memcpy(out.data(), data, n * 4);
      break;
    case DType::f16:
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = dtype == DType::f16 ? model::f16_to_f32(h) : model::bf16_to_f32(h);
      }
      break;
    case DType::q8_0:
      for (size_t b = 0; b < n / model::kQ8BlockValues; ++b) {
        model::Q8Block blk;
        std::memcpy(&blk, data + b * sizeof blk, sizeof blk);
        for (int j = 0; j < model::kQ8BlockValues; ++j) {
          out[b * model::kQ8BlockValues + size_t(j)] = model::f16_to_f32(blk.d) * float(blk.q[j]);
        }
      }
      break;
    case DType::q4_0:  // value = d * (code - 8); values j and j + 16 in byte j
      for (size_t b = 0; b < n / model::kQ8BlockValues; ++b) {
        model::Q4_0Block blk;
        std::memcpy(&blk, data + b * sizeof blk, sizeof blk);
        const float d = model::f16_to_f32(blk.d);
        for (size_t j = 0; j < 16; ++j) {
          out[b * 32 + j] = d * float((blk.q[j] & 15) - 8);
          out[b * 32 + j + 16] = d * float((blk.q[j] >> 4) - 8);
        }
      }
      break;
    case DType::q4_1:  // value = d * code + m; values j and j + 16 in byte j
      for (size_t b = 0; b < n / model::kQ8BlockValues; ++b) {
        model::Q4_1Block blk;
        std::memcpy(&blk, data + b * sizeof blk, sizeof blk);
        const float d = model::f16_to_f32(blk.d), m = model::f16_to_f32(blk.m);
        for (size_t j = 0; j < 16; ++j) {
          out[b * 32 + j] = d * float(blk.q[j] & 15) + m;
          out[b * 32 + j + 16] = d * float(blk.q[j] >> 4) + m;
        }
      }
      break;
    case DType::q5_1:  // as Q4_1, bit j of the word qh the fifth bit of value j
      for (size_t b = 0; b < n / model::kQ8BlockValues; ++b) {
        model::Q5_1Block blk;
        std::memcpy(&blk, data + b * sizeof blk, sizeof blk);
        const float d = model::f16_to_f32(blk.d), m = model::f16_to_f32(blk.m);
        const uint32_t qh = uint32_t(blk.qh[0]) | uint32_t(blk.qh[1]) << 8 |
                            uint32_t(blk.qh[2]) << 16 | uint32_t(blk.qh[3]) << 24;
        for (size_t j = 0; j < 16; ++j) {
          out[b * 32 + j] = d * float((blk.q[j] & 15) | ((qh >> j) & 1) << 4) + m;
          out[b * 32 + j + 16] = d * float((blk.q[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) + m;
        }
      }
      break;
  }
  return out;
}

std::vector<float> round_trip(DType dtype, std::span<const float> values) {
  const std::string bytes = encode_tensor(dtype, values);
  return decode_tensor(dtype, reinterpret_cast<const std::byte*>(bytes.data()), values.size());
}

}  // namespace parley::test

#include "model/dtype.h"

#include <cstring>
#include <type_traits>

namespace parley::model {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::q8_0: return "Q8_0";
    case DType::q4_0: return "Q4_0";
    case DType::q4_1: return "Q4_1";
    case DType::q5_1: return "Q5_1";
  }
  return "?";
}

namespace {

// Q4_0, Q4_1 and Q5_1 blocks: the code's low four bits in byte j % 16 (the low nibble for
// j < 16) and Q5_1's fifth bit bit j of the word qh; value = d * (code - 8) for Q4_0, else
// d * code + m.
template <class Block>
void dequantize_nibble_blocks(const std::byte* src, size_t n, float* dst) {
  constexpr bool kMinimum = !std::is_same_v<Block, Q4_0Block>;
  for (size_t b = 0; b < n / kQ8BlockValues; ++b) {
    Block blk;
    std::memcpy(&blk, src + b * sizeof(Block), sizeof blk);
    const float d = f16_to_f32(blk.d);
    float m = 0.0f;
    if constexpr (kMinimum) m = f16_to_f32(blk.m);
    uint32_t qh = 0;
    if constexpr (std::is_same_v<Block, Q5_1Block>) std::memcpy(&qh, blk.qh, 4);
    const auto value = [&](uint32_t code) {
      if constexpr (kMinimum) return d * float(code) + m;
      return d * float(int(code) - 8);
    };
    float* y = dst + b * kQ8BlockValues;
    for (int j = 0; j < kQ4BlockBytes; ++j) {
      y[j] = value((blk.q[j] & 0x0fu) | ((qh >> j) & 1u) << 4);
      y[j + kQ4BlockBytes] = value((blk.q[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
    }
  }
}

}  // namespace

void dequantize(DType t, const std::byte* src, size_t n, float* dst) {
  switch (t) {
    case DType::f32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::f16:
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::q8_0:
      for (size_t b = 0; b < n / kQ8BlockValues; ++b) {
        Q8Block blk;
        std::memcpy(&blk, src + b * sizeof(Q8Block), sizeof blk);
        const float d = f16_to_f32(blk.d);
        for (int i = 0; i < kQ8BlockValues; ++i) {
          dst[b * kQ8BlockValues + size_t(i)] = d * float(blk.q[i]);
        }
      }
      return;
    case DType::q4_0:
      dequantize_nibble_blocks<Q4_0Block>(src, n, dst);
      return;
    case DType::q4_1:
      dequantize_nibble_blocks<Q4_1Block>(src, n, dst);
      return;
    case DType::q5_1:
      dequantize_nibble_blocks<Q5_1Block>(src, n, dst);
      return;
  }
}

}  // namespace parley::model

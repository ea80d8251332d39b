// Activation rows quantized per block of 32 values for integer products with Q8_0 weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parley::backend::cpu {

// x[i][k] ~= scale[i][k / 32] * q[i][k]. Per block: scale = amax / 32767 and
// q = round-to-nearest-even(x * (32767 / amax)) (amax = the block's largest |x|), so
// |x - scale * q| <= scale / 2. An all-zero block has scale 0; a block holding a NaN or an
// infinity has scale NaN, so that the products it enters come out NaN as float ones would.
//
// 16-bit rather than llama.cpp's 8-bit values: the integer products cost the same (pairs of
// 16-bit values, vpmaddwd), and the rounding they add (2^-16 of a block's largest value) stays
// far below the 8-bit rounding of the weights themselves. 8-bit values would add their own:
// on stories260K's Q8_0 file a numpy forward pass with activations rounded to 8-bit blocks
// moved the logits up to 0.43 from run.c's float ones, against 0.31 with 16-bit blocks or
// none (the weights' rounding alone).
struct ActivationBlocks {
  static constexpr size_t kBlock = 32;
  static constexpr float kMax = 32767.0f;
  // Floats after the last scale row, so that the products may load scales a whole vector at
  // a time past a row's end.
  static constexpr size_t kScalePadding = 16;

  std::vector<int16_t> q;    // [n, cols]
  std::vector<float> scale;  // [n, cols / kBlock], then kScalePadding floats of no use
  // [n, cols / kBlock], then kScalePadding floats: scale x (the block's exact sum of q), for
  // the products with weights that have a minimum (Q4_1: sum of (d * code + m) * x).
  std::vector<float> sum;
  size_t n = 0;
  size_t cols = 0;

  const int16_t* q_row(size_t i) const { return q.data() + i * cols; }
  const float* scale_row(size_t i) const { return scale.data() + i * (cols / kBlock); }
  const float* sum_row(size_t i) const { return sum.data() + i * (cols / kBlock); }
};

// Quantizes x [n, cols] into out (its buffers reused); cols must be a multiple of 32. The best
// SIMD target of the running CPU; every target gives the same bits.
void quantize_activations(const float* x, size_t n, size_t cols, ActivationBlocks& out);

}  // namespace parley::backend::cpu

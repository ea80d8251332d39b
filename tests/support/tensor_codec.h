// Test-side float <-> tensor byte conversions (F32, F16, BF16, and the block types Q8_0, Q4_0,
// Q4_1, Q5_1), used to write synthetic models and to compare loaded weights with what was
// written.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/weights.h"

namespace parley::test {

// Row-major values of a [rows, cols] tensor -> its bytes in `dtype`. Q8_0 follows ggml's
// quantize_row_q8_0_ref: per 32 values d = amax / 127, q = round(x * (1 / d)), d stored F16;
// Q4_0, Q4_1 and Q5_1 their quantize_row_q4_0_ref, _q4_1_ref and _q5_1_ref (tensor_codec.cpp).
std::string encode_tensor(model::DType dtype, std::span<const float> values);

// Bytes of `n` values in `dtype` -> floats.
std::vector<float> decode_tensor(model::DType dtype, const std::byte* data, size_t n);

// What a loader should hand back for values written in `dtype`: encode, then decode.
std::vector<float> round_trip(model::DType dtype, std::span<const float> values);

// All elements of a loaded view as floats.
inline std::vector<float> decode_view(const model::TensorView& v) {
  return decode_tensor(v.dtype, v.data, size_t(v.n_elements()));
}

}  // namespace parley::test

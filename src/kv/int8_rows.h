// INT8 quantization of one K or V head row, vectorized: the same bits as
// kernels::quantize_int8 (the definition shared with the CUDA kernels), faster.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parley::kv {

// q[i] = round_half_even(x[i] / s) clamped to [-127, 127], s = max|x| / 127 (0 for an
// all-zero row); returns s. A row holding a NaN or an infinity goes through the scalar
// definition unchanged. The best SIMD target of the running CPU.
float quantize_int8_row(const float* x, size_t n, int8_t* q);

}  // namespace parley::kv

// The SIMD kernel behind every weight product: a range of weight rows times n activation
// rows, on the best target of the running CPU (Highway dynamic dispatch).
#pragma once

#include <cstddef>

#include "model/weights.h"

namespace parley::backend::cpu {

// y[i * y_stride + r] = dot(row r of w, row i of x) for r in [r0, r1) and i < n; x is
// [n, w.cols]. Weights are converted to float as they are read (a few rows at a time for
// large n), never as a whole matrix.
//
// Summation order, the same for every n: per row pair, partial dot products over blocks of
// kSumBlockCols columns, each a SIMD accumulation reduced to one float, are added in column
// order, then the columns that do not fill a vector are added one by one. So a y element
// depends only on its own two rows (never on n, on r0/r1 or on the thread count), and
// prefill gives the bits that decoding the same tokens one at a time gives.
void matmul_rows(const model::TensorView& w, const float* x, size_t n, float* y,
                 size_t y_stride, size_t r0, size_t r1);

// The SIMD target matmul_rows runs on now ("AVX3", "AVX2", "SSE4", "SCALAR", ...).
const char* matmul_target_name();

}  // namespace parley::backend::cpu

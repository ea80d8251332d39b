// The SIMD kernel behind F32, F16 and BF16 weight products (Q8_0: matmul_q8_kernels.h): a
// range of weight rows times n activation rows, on the best target of the running CPU
// (Highway dynamic dispatch).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_matrix.h"

namespace parley::backend::cpu {

// y[i * y_stride + r] = dot(row r of w, row i of x) for r in [r0, r1) and i < n; x is
// [n, w.cols]; w is F32, F16 or BF16, tiled (cpu_matrix.h; Error(internal) for Q8_0, which
// matmul_rows_q8 multiplies). Weights are converted to float as they are read (a few rows at
// a time for large n), never as a whole matrix.
//
// Summation order, the same for every n: per row pair, partial dot products over blocks of
// kSumBlockCols columns, each a SIMD accumulation reduced to one float, are added in column
// order, then the columns that do not fill a vector are added one by one. So a y element
// depends only on its own two rows (never on n, on r0/r1 or on the thread count), and
// prefill gives the bits that decoding the same tokens one at a time gives.
void matmul_rows(const CpuMatrix& w, const float* x, size_t n, float* y, size_t y_stride,
                 size_t r0, size_t r1);

// The SIMD target every dispatched kernel runs on now ("AVX3", "AVX2", "SSE4", "SCALAR",
// ...), and its Highway bit (HWY_AVX3, ...).
const char* matmul_target_name();
int64_t matmul_target();

// The Highway targets compiled into the kernels (HWY_TARGETS), whether or not this CPU runs them.
int64_t compiled_simd_targets();

}  // namespace parley::backend::cpu

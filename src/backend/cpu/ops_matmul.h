// Products with weight matrices of any stored type (F32, F16, BF16, Q8_0), and embedding
// lookup. Weights are dequantized to float on the fly; activations stay float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/weights.h"

namespace parley::backend::cpu {

class ThreadPool;

// y[n, w.rows] = x[n, w.cols] * w^T, parallel over the rows of w. Each weight row is read
// once for all n rows of x. Each y element depends only on its own row pair, never on n or
// on the thread count. Throws Error(internal) for a Q8_0 matrix whose cols is not a
// multiple of 32.
void matmul(const model::TensorView& w, const float* x, size_t n, float* y, ThreadPool& pool);

// out[w.cols] = row r of w as floats (embedding lookup, norm weights).
void dequantize_row(const model::TensorView& w, int64_t r, float* out);

}  // namespace parley::backend::cpu

// Products with weight matrices of any stored type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_1),
// and embedding lookup. F32/F16/BF16 weights are converted to float as they are read and
// multiply float activations; the block types' weights (packed, cpu_matrix.h) multiply the
// activations quantized to 16-bit blocks (activation_blocks.h) in integer arithmetic, each
// block's sum scaled in float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "backend/cpu/cpu_matrix.h"
#include "model/weights.h"

namespace parley::backend::cpu {

class ThreadPool;

// One matrix of a fused product and where its result goes: y [n, w->rows].
struct MatmulOutput {
  const CpuMatrix* w;
  float* y;
};

// y[n, w.rows] = x[n, w.cols] * w^T, parallel over the rows of w. Each weight row is read
// once per block of x rows. Each y element depends only on its own row pair, never on n or
// on the thread count (see matmul_rows).
void matmul(const CpuMatrix& w, const float* x, size_t n, float* y, ThreadPool& pool);

// Several matrices that multiply the same x (the q, k and v projections; all with the same
// cols) in one parallel region: one wake-up of the workers instead of one per matrix, and x
// quantized once. Same results as matmul.
void matmul_many(std::initializer_list<MatmulOutput> outputs, const float* x, size_t n,
                 ThreadPool& pool);

// out[n, gate.rows] = silu(x gate^T) * (x up^T): the feed-forward's two products and its gate
// in one parallel region, each task gating the rows it has just computed while they are in
// cache. up_scratch [n, up.rows] receives x up^T. Same results as matmul, matmul, swiglu.
void matmul_swiglu(const CpuMatrix& gate, const CpuMatrix& up, const float* x, size_t n,
                   float* out, float* up_scratch, ThreadPool& pool);

// out[w.cols] = row r of w as floats (embedding lookup, norm weights).
void dequantize_row(const model::TensorView& w, int64_t r, float* out);

}  // namespace parley::backend::cpu

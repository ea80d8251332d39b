#include "backend/cpu/ops_matmul.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backend/cpu/activation_blocks.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_q8_kernels.h"
#include "backend/cpu/ops_swiglu.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "model/dtype.h"

namespace parley::backend::cpu {
namespace {

// How a product's rows are cut into units of parallel work (a task's range may hold several).
// Products of many activation rows are compute-bound: units of kRowsPerUnit rows, a multiple
// of the kernels' register tile, shared out as threads come for them, so that they finish
// together. Products of a few rows (decode) stream each weight once: each matrix is cut into
// one contiguous part per thread, so that a thread reads its part as one stream that its
// hints and the hardware prefetchers follow from start to end. Every start of a range costs
// a full memory latency before the stream flows, and smaller units make many of them: a
// decode of stories110m's Q8_0 products streamed at 43-47 GB/s in halves against 36-37 GB/s
// in 16-row units on a 2-core Zen 4 VM whose read pass ran at 50-55 GB/s (in-process
// alternation; bench/RESULTS.md). A thread that is late leaves its part to the others.
constexpr size_t kRowsPerUnit = 16;
constexpr size_t kStreamedRows = 8;  // activation rows up to which a product streams its weights

struct RowSplit {
  size_t parts;  // 0: units of kRowsPerUnit rows; else this many parts, one per thread

  RowSplit(size_t n, const ThreadPool& pool) : parts(n <= kStreamedRows ? pool.size() : 0) {}

  size_t units_of(const CpuMatrix& w) const {
    const size_t rows = size_t(w.rows());
    return parts > 0 ? std::min(parts, rows) : (rows + kRowsPerUnit - 1) / kRowsPerUnit;
  }
  // The first row of unit u of w (u = units_of(w): the row count). Parts start on a tile.
  size_t unit_row(const CpuMatrix& w, size_t u) const {
    const size_t rows = size_t(w.rows());
    if (parts == 0) return std::min(rows, u * kRowsPerUnit);
    const size_t units = units_of(w);
    if (u >= units) return rows;
    return rows * u / units / kTileRows * kTileRows;
  }
};

// The activations in the forms the matrices need: floats, plus 16-bit blocks when a block
// matrix is among them, quantized once by the calling thread before the parallel region.
struct Activations {
  const float* x;
  size_t n;
  const ActivationBlocks* blocks;
};

Activations prepare(const float* x, size_t n, size_t cols, bool any_q8) {
  thread_local ActivationBlocks blocks;  // grows to the largest product, then reused
  if (!any_q8) return {x, n, nullptr};
  quantize_activations(x, n, cols, blocks);
  return {x, n, &blocks};
}

void product_rows(const CpuMatrix& w, const Activations& a, float* y, size_t y_stride, size_t r0,
                  size_t r1) {
  if (r0 == r1) return;  // a part of a matrix with fewer rows than threads
  if (model::is_blocked(w.dtype())) {
    matmul_rows_q8(w, *a.blocks, y, y_stride, r0, r1);
  } else {
    matmul_rows(w, a.x, a.n, y, y_stride, r0, r1);
  }
}

}  // namespace

void matmul(const CpuMatrix& w, const float* x, size_t n, float* y, ThreadPool& pool) {
  matmul_many({MatmulOutput{&w, y}}, x, n, pool);
}

void matmul_many(std::initializer_list<MatmulOutput> outputs, const float* x, size_t n,
                 ThreadPool& pool) {
  const RowSplit split(n, pool);
  size_t total = 0;
  bool any_q8 = false;
  for (const MatmulOutput& o : outputs) {
    if (o.w->cols() != outputs.begin()->w->cols()) {
      fail(Status::internal, "fused products of " + o.w->name() + " differ in row length");
    }
    total += split.units_of(*o.w);
    any_q8 = any_q8 || model::is_blocked(o.w->dtype());
  }
  if (total == 0) return;
  const Activations a = prepare(x, n, size_t(outputs.begin()->w->cols()), any_q8);
  // Units of the matrices laid end to end; a task's range may span two of them.
  pool.parallel_for(total, [&](size_t u0, size_t u1) {
    size_t base = 0;
    for (const MatmulOutput& o : outputs) {
      const size_t units = split.units_of(*o.w);
      const size_t lo = std::max(u0, base), hi = std::min(u1, base + units);
      if (lo < hi) {
        product_rows(*o.w, a, o.y, size_t(o.w->rows()), split.unit_row(*o.w, lo - base),
                     split.unit_row(*o.w, hi - base));
      }
      base += units;
    }
  });
}

void matmul_swiglu(const CpuMatrix& gate, const CpuMatrix& up, const float* x, size_t n,
                   float* out, float* up_scratch, ThreadPool& pool) {
  if (gate.rows() != up.rows() || gate.cols() != up.cols()) {  // no string built on the hot path
    fail(Status::internal, "gate " + gate.name() + " and up " + up.name() + " differ in shape");
  }
  const size_t rows = size_t(gate.rows());
  const bool any_q8 = model::is_blocked(gate.dtype()) || model::is_blocked(up.dtype());
  const Activations a = prepare(x, n, size_t(gate.cols()), any_q8);
  const RowSplit split(n, pool);
  pool.parallel_for(split.units_of(gate), [&](size_t u0, size_t u1) {
    const size_t r0 = split.unit_row(gate, u0), r1 = split.unit_row(gate, u1);
    product_rows(gate, a, out, rows, r0, r1);
    product_rows(up, a, up_scratch, rows, r0, r1);
    for (size_t i = 0; i < n; ++i) {
      float* o = out + i * rows + r0;
      swiglu(o, up_scratch + i * rows + r0, r1 - r0, o);
    }
  });
}

void dequantize_row(const model::TensorView& w, int64_t r, float* out) {
  model::dequantize(w.dtype, w.row(r), size_t(w.cols), out);
}

}  // namespace parley::backend::cpu

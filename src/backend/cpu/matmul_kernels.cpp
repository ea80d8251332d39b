// Compiled once per SIMD target (foreach_target.h re-includes this file); HWY_DYNAMIC_DISPATCH
// picks the best target of the running CPU, so one binary runs on any x86-64.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/matmul_kernels.cpp"
#include "backend/cpu/matmul_kernels.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/error.h"
#include "model/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Columns per partial sum. Fixed (not tuned per call) because it is part of the summation
// order that makes every batch size give the same bits; a multiple of every vector width.
constexpr size_t kSumBlockCols = 1024;

// Register tile: weight rows x activation rows accumulated at once. Each loaded weight vector
// feeds kTileCols products and each activation vector kTileRows. AVX-512 has 32 vector
// registers (24 accumulators fit); narrower targets have 16. kTileRows is also the matrix
// copy's tile (cpu_matrix.h), so that a register tile reads one run of bytes.
constexpr size_t kTileCols = HWY_TARGET <= HWY_AVX3 ? 6 : 2;

// Below this many activation rows, weights are converted in registers as they are read
// (decode is bound by reading them once); from it on, a few weight rows at a time are
// converted into a float panel that every activation row then reuses.
constexpr size_t kSmallBatch = 8;

// Activation rows per cache block of the batched path: their kSumBlockCols-wide slices
// (64 x 4 KiB) stay in L2 while every weight row of the range passes over them.
constexpr size_t kActivationBlock = 64;

// Weight loaders over a tiled copy (cpu_matrix.h): Lanes(df) weights of row r (relative to the
// loader's first row, which lies in `tile`) from column k as floats, and one weight as a float.
// Both give exactly the stored value. A vector never crosses a 64-byte chunk: the columns
// start on a multiple of the vector width.
template <class T>
struct TiledRows {
  static constexpr size_t kValueBytes = sizeof(T);
  const std::byte* tile;
  size_t first;  // the loader's row 0 within the tile
  HWY_INLINE const T* ptr(size_t r, size_t k) const {
    return reinterpret_cast<const T*>(tile + CpuMatrix::in_tile_offset(first + r, k * kValueBytes));
  }
};

struct F32Rows : TiledRows<float> {
  HWY_INLINE VF load(DF df, size_t r, size_t k) const { return hn::LoadU(df, ptr(r, k)); }
  HWY_INLINE float at(size_t r, size_t k) const { return *ptr(r, k); }
};

struct F16Rows : TiledRows<hwy::float16_t> {
  HWY_INLINE VF load(DF df, size_t r, size_t k) const {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), ptr(r, k)));
  }
  HWY_INLINE float at(size_t r, size_t k) const {
    return model::f16_to_f32(*reinterpret_cast<const uint16_t*>(ptr(r, k)));
  }
};

struct BF16Rows : TiledRows<hwy::bfloat16_t> {
  HWY_INLINE VF load(DF df, size_t r, size_t k) const {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DF>(), ptr(r, k)));
  }
  HWY_INLINE float at(size_t r, size_t k) const {
    return model::bf16_to_f32(*reinterpret_cast<const uint16_t*>(ptr(r, k)));
  }
};

// Rows of converted weights in a float panel holding columns [k0, k0 + kSumBlockCols).
struct PanelRows {
  const float* panel;
  size_t k0;
  HWY_INLINE VF load(DF df, size_t r, size_t k) const {
    return hn::Load(df, panel + r * kSumBlockCols + (k - k0));
  }
};

// sums[r * C + c] += dot(weight row r, activation row c) over columns [k0, k1), one SIMD
// accumulator per pair reduced at the end. x points at activation row 0 (full rows). The
// loops over the tile are unrolled so that its accumulators live in registers (GCC -O2 would
// keep them in memory, a store and reload per product).
template <size_t R, size_t C, class W>
HWY_INLINE void tile_sums(const W& w, const float* x, size_t x_stride, size_t k0, size_t k1,
                          float* sums) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF acc[R][C];
  HWY_UNROLL(8)
  for (size_t r = 0; r < R; ++r) {
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) acc[r][c] = hn::Zero(df);
  }
  for (size_t k = k0; k < k1; k += lanes) {
    VF wv[R];
    HWY_UNROLL(8)
    for (size_t r = 0; r < R; ++r) wv[r] = w.load(df, r, k);
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) {
      const VF xv = hn::LoadU(df, x + c * x_stride + k);
      HWY_UNROLL(8)
      for (size_t r = 0; r < R; ++r) acc[r][c] = hn::MulAdd(wv[r], xv, acc[r][c]);
    }
  }
  HWY_UNROLL(8)
  for (size_t r = 0; r < R; ++r) {
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) sums[r * C + c] += hn::GetLane(hn::SumOfLanes(df, acc[r][c]));
  }
}

// s + the products of columns [k0, cols) added one at a time (the part of a row shorter than
// a vector), fused or not exactly as the target's vector MulAdd is.
template <class W>
HWY_INLINE float tail_sum(const W& w, size_t r, const float* x, size_t k0, size_t cols,
                          float s) {
  const hn::CappedTag<float, 1> d1;
  auto acc = hn::Set(d1, s);
  for (size_t k = k0; k < cols; ++k) {
    acc = hn::MulAdd(hn::Set(d1, w.at(r, k)), hn::Set(d1, x[k]), acc);
  }
  return hn::GetLane(acc);
}

struct Problem {
  const CpuMatrix& w;
  const float* x;
  size_t n;
  float* y;
  size_t y_stride;
  size_t cols;      // w.cols
  size_t cols_vec;  // columns covered by whole vectors
};

// A loader whose row 0 is row r of the matrix.
template <class Rows>
HWY_INLINE Rows rows_from(const Problem& p, size_t r) {
  Rows rows;
  rows.tile = p.w.tile(r / kTileRows);
  rows.first = r % kTileRows;
  return rows;
}

// Rows [r, r + R) x activation rows [i, i + C), weights converted as they are read.
template <size_t R, size_t C, class Rows>
HWY_INLINE void small_batch_tile(const Problem& p, size_t r, size_t i) {
  const Rows w = rows_from<Rows>(p, r);
  const float* x = p.x + i * p.cols;
  float sums[R * C] = {};
  for (size_t k0 = 0; k0 < p.cols_vec; k0 += kSumBlockCols) {
    tile_sums<R, C>(w, x, p.cols, k0, std::min(p.cols_vec, k0 + kSumBlockCols), sums);
  }
  for (size_t rr = 0; rr < R; ++rr) {
    for (size_t c = 0; c < C; ++c) {
      p.y[(i + c) * p.y_stride + r + rr] =
          tail_sum(w, rr, x + c * p.cols, p.cols_vec, p.cols, sums[rr * C + c]);
    }
  }
}

template <size_t R, class Rows>
HWY_INLINE void small_batch_rows(const Problem& p, size_t r) {
  size_t i = 0;
  for (; i + 4 <= p.n; i += 4) small_batch_tile<R, 4, Rows>(p, r, i);
  for (; i < p.n; ++i) small_batch_tile<R, 1, Rows>(p, r, i);
}

// Whole tiles of the copy (cpu_matrix.h) at a time, rows on their own before the range's
// first tile and after its last: a tile's bytes are one run, which the hardware prefetchers
// follow without software hints.
template <class Rows>
void small_batch(const Problem& p, size_t r0, size_t r1) {
  size_t r = r0;
  for (; r < r1 && r % kTileRows != 0; ++r) small_batch_rows<1, Rows>(p, r);
  for (; r + kTileRows <= r1; r += kTileRows) small_batch_rows<kTileRows, Rows>(p, r);
  for (; r < r1; ++r) small_batch_rows<1, Rows>(p, r);
}

// Adds the partial sums of columns [k0, k1) for weight rows [r, r + R) (loader w) and
// activation rows [i0, i1) into y.
template <size_t R, class W>
HWY_INLINE void add_block(const Problem& p, const W& w, size_t r, size_t i0, size_t i1,
                          size_t k0, size_t k1) {
  const auto run = [&](auto cols_tag, size_t i) HWY_ATTR {
    constexpr size_t C = decltype(cols_tag)::value;
    float sums[R * C];
    for (size_t rr = 0; rr < R; ++rr) {
      for (size_t c = 0; c < C; ++c) sums[rr * C + c] = p.y[(i + c) * p.y_stride + r + rr];
    }
    tile_sums<R, C>(w, p.x + i * p.cols, p.cols, k0, k1, sums);
    for (size_t rr = 0; rr < R; ++rr) {
      for (size_t c = 0; c < C; ++c) p.y[(i + c) * p.y_stride + r + rr] = sums[rr * C + c];
    }
  };
  size_t i = i0;
  for (; i + kTileCols <= i1; i += kTileCols) run(std::integral_constant<size_t, kTileCols>(), i);
  for (; i < i1; ++i) run(std::integral_constant<size_t, 1>(), i);
}

// Weight rows [r, r + R), columns [k0, k1) as floats into the panel, read in address order
// (the rows' chunks alternate in the tile).
template <size_t R, class Rows>
HWY_INLINE void convert_panel(const Rows& w, size_t k0, size_t k1, float* panel) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  for (size_t k = k0; k < k1; k += lanes) {
    HWY_UNROLL(8)
    for (size_t rr = 0; rr < R; ++rr) {
      hn::Store(w.load(df, rr, k), df, panel + rr * kSumBlockCols + (k - k0));
    }
  }
}

template <size_t R, class Rows>
HWY_INLINE void batched_rows(const Problem& p, size_t r, size_t i0, size_t i1, size_t k0,
                             size_t k1, float* panel) {
  const Rows w = rows_from<Rows>(p, r);
  if constexpr (std::is_same_v<Rows, F32Rows>) {
    add_block<R>(p, w, r, i0, i1, k0, k1);  // already floats: no panel
  } else {
    convert_panel<R>(w, k0, k1, panel);
    add_block<R>(p, PanelRows{panel, k0}, r, i0, i1, k0, k1);
  }
}

// Blocked over activation rows and columns so that the activation block stays in L2 and the
// converted weight panel in L1; y accumulates the partial sums in the order small_batch adds
// them.
template <class Rows>
void batched(const Problem& p, size_t r0, size_t r1) {
  HWY_ALIGN float panel[kTileRows * kSumBlockCols];
  for (size_t i = 0; i < p.n; ++i) {
    for (size_t r = r0; r < r1; ++r) p.y[i * p.y_stride + r] = 0.0f;
  }
  for (size_t i0 = 0; i0 < p.n; i0 += kActivationBlock) {
    const size_t i1 = std::min(p.n, i0 + kActivationBlock);
    for (size_t k0 = 0; k0 < p.cols_vec; k0 += kSumBlockCols) {
      const size_t k1 = std::min(p.cols_vec, k0 + kSumBlockCols);
      size_t r = r0;
      for (; r < r1 && r % kTileRows != 0; ++r) {
        batched_rows<1, Rows>(p, r, i0, i1, k0, k1, panel);
      }
      for (; r + kTileRows <= r1; r += kTileRows) {
        batched_rows<kTileRows, Rows>(p, r, i0, i1, k0, k1, panel);
      }
      for (; r < r1; ++r) batched_rows<1, Rows>(p, r, i0, i1, k0, k1, panel);
    }
  }
  if (p.cols_vec == p.cols) return;
  for (size_t r = r0; r < r1; ++r) {
    const Rows w = rows_from<Rows>(p, r);
    for (size_t i = 0; i < p.n; ++i) {
      float& y = p.y[i * p.y_stride + r];
      y = tail_sum(w, 0, p.x + i * p.cols, p.cols_vec, p.cols, y);
    }
  }
}

template <class Rows>
void matmul_rows_of(const Problem& p, size_t r0, size_t r1) {
  if (p.n < kSmallBatch) {
    small_batch<Rows>(p, r0, r1);
  } else {
    batched<Rows>(p, r0, r1);
  }
}

void MatmulRows(const CpuMatrix& w, const float* x, size_t n, float* y, size_t y_stride,
                size_t r0, size_t r1) {
  const DF df;
  const size_t cols = size_t(w.cols());
  const Problem p{w, x, n, y, y_stride, cols, cols / hn::Lanes(df) * hn::Lanes(df)};
  switch (w.dtype()) {
    case model::DType::f32: matmul_rows_of<F32Rows>(p, r0, r1); break;
    case model::DType::f16: matmul_rows_of<F16Rows>(p, r0, r1); break;
    case model::DType::bf16: matmul_rows_of<BF16Rows>(p, r0, r1); break;
    case model::DType::q8_0:
    case model::DType::q4_0:
    case model::DType::q4_1:
    case model::DType::q5_1: break;  // rejected by matmul_rows
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
int64_t Target() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(MatmulRows);
HWY_EXPORT(TargetName);
HWY_EXPORT(Target);

void matmul_rows(const CpuMatrix& w, const float* x, size_t n, float* y, size_t y_stride,
                 size_t r0, size_t r1) {
  if (model::is_blocked(w.dtype())) {  // no string built on the hot path
    fail(Status::internal, std::string(model::dtype_name(w.dtype())) + " matrix " + w.name() +
                               " needs quantized activations");
  }
  HWY_DYNAMIC_DISPATCH(MatmulRows)(w, x, n, y, y_stride, r0, r1);
}

const char* matmul_target_name() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

int64_t matmul_target() { return HWY_DYNAMIC_DISPATCH(Target)(); }

int64_t compiled_simd_targets() { return HWY_TARGETS; }

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

// Compiled once per SIMD target (foreach_target.h re-includes this file); HWY_DYNAMIC_DISPATCH
// picks the best target of the running CPU, so one binary runs on any x86-64.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/ops_matmul.cpp"
#include "backend/cpu/ops_matmul.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "model/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Rows of x that share one pass over a weight row: each loaded weight vector feeds this many
// accumulators.
constexpr size_t kRowGroup = 4;

// Weight loaders: Lanes(df) weights from element i as floats, and one weight as a float.
struct F32Weights {
  const float* w;
  HWY_INLINE VF load(DF df, size_t i) const { return hn::LoadU(df, w + i); }
  HWY_INLINE float at(size_t i) const { return w[i]; }
};

struct F16Weights {
  const uint16_t* w;
  HWY_INLINE VF load(DF df, size_t i) const {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(w + i)));
  }
  HWY_INLINE float at(size_t i) const { return model::f16_to_f32(w[i]); }
};

struct BF16Weights {
  const uint16_t* w;
  HWY_INLINE VF load(DF df, size_t i) const {
    const hn::Rebind<hwy::bfloat16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::bfloat16_t*>(w + i)));
  }
  HWY_INLINE float at(size_t i) const { return model::bf16_to_f32(w[i]); }
};

// y[r * y_stride] = dot(w, x + r * x_stride) for r < kRows; x rows have `cols` values.
template <size_t kRows, class Weights>
HWY_INLINE void dot_group(const Weights& w, size_t cols, const float* x, size_t x_stride, float* y,
                          size_t y_stride) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const float* x0 = x;
  const float* x1 = kRows > 1 ? x + x_stride : x;
  const float* x2 = kRows > 2 ? x + 2 * x_stride : x;
  const float* x3 = kRows > 3 ? x + 3 * x_stride : x;
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + lanes <= cols; i += lanes) {
    const VF wv = w.load(df, i);
    a0 = hn::MulAdd(wv, hn::LoadU(df, x0 + i), a0);
    if constexpr (kRows > 1) a1 = hn::MulAdd(wv, hn::LoadU(df, x1 + i), a1);
    if constexpr (kRows > 2) a2 = hn::MulAdd(wv, hn::LoadU(df, x2 + i), a2);
    if constexpr (kRows > 3) a3 = hn::MulAdd(wv, hn::LoadU(df, x3 + i), a3);
  }
  float s0 = hn::GetLane(hn::SumOfLanes(df, a0));
  float s1 = hn::GetLane(hn::SumOfLanes(df, a1));
  float s2 = hn::GetLane(hn::SumOfLanes(df, a2));
  float s3 = hn::GetLane(hn::SumOfLanes(df, a3));
  for (; i < cols; ++i) {  // the part of a row shorter than a vector
    const float wi = w.at(i);
    s0 += wi * x0[i];
    if constexpr (kRows > 1) s1 += wi * x1[i];
    if constexpr (kRows > 2) s2 += wi * x2[i];
    if constexpr (kRows > 3) s3 += wi * x3[i];
  }
  y[0] = s0;
  if constexpr (kRows > 1) y[y_stride] = s1;
  if constexpr (kRows > 2) y[2 * y_stride] = s2;
  if constexpr (kRows > 3) y[3 * y_stride] = s3;
}

// One F16 value as float with the target's conversion instruction (F16C where present): the
// scalar bit-twiddling converter costs as much as the block's 32 products.
HWY_INLINE float f16_scale(uint16_t bits) {
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
  return hn::GetLane(
      hn::PromoteTo(d1, hn::LoadU(dh1, reinterpret_cast<const hwy::float16_t*>(&bits))));
}

// Q8_0: each block's 32 int8 values times its scale give the float weights the reference
// uses; they multiply float activations (activations are not quantized).
template <size_t kRows>
HWY_INLINE void dot_group_q8(const model::Q8Block* blocks, size_t cols, const float* x,
                             size_t x_stride, float* y, size_t y_stride) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const size_t lanes = hn::Lanes(df);
  const float* x0 = x;
  const float* x1 = kRows > 1 ? x + x_stride : x;
  const float* x2 = kRows > 2 ? x + 2 * x_stride : x;
  const float* x3 = kRows > 3 ? x + 3 * x_stride : x;
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  float t0 = 0, t1 = 0, t2 = 0, t3 = 0;  // only for vectors wider than a block
  const size_t n_blocks = cols / model::kQ8BlockValues;
  for (size_t b = 0; b < n_blocks; ++b) {
    const model::Q8Block& blk = blocks[b];
    const float d = f16_scale(blk.d);
    const VF dv = hn::Set(df, d);
    const size_t base = b * model::kQ8BlockValues;
    size_t j = 0;
    for (; j + lanes <= size_t(model::kQ8BlockValues); j += lanes) {
      const VF wv = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, blk.q + j))), dv);
      const size_t i = base + j;
      a0 = hn::MulAdd(wv, hn::LoadU(df, x0 + i), a0);
      if constexpr (kRows > 1) a1 = hn::MulAdd(wv, hn::LoadU(df, x1 + i), a1);
      if constexpr (kRows > 2) a2 = hn::MulAdd(wv, hn::LoadU(df, x2 + i), a2);
      if constexpr (kRows > 3) a3 = hn::MulAdd(wv, hn::LoadU(df, x3 + i), a3);
    }
    for (; j < size_t(model::kQ8BlockValues); ++j) {
      const float wi = d * float(blk.q[j]);
      const size_t i = base + j;
      t0 += wi * x0[i];
      if constexpr (kRows > 1) t1 += wi * x1[i];
      if constexpr (kRows > 2) t2 += wi * x2[i];
      if constexpr (kRows > 3) t3 += wi * x3[i];
    }
  }
  y[0] = hn::GetLane(hn::SumOfLanes(df, a0)) + t0;
  if constexpr (kRows > 1) y[y_stride] = hn::GetLane(hn::SumOfLanes(df, a1)) + t1;
  if constexpr (kRows > 2) y[2 * y_stride] = hn::GetLane(hn::SumOfLanes(df, a2)) + t2;
  if constexpr (kRows > 3) y[3 * y_stride] = hn::GetLane(hn::SumOfLanes(df, a3)) + t3;
}

// Calls group(row count as a compile-time constant, first x row, first y row) over the n
// rows of x in groups of kRowGroup (the last group may be smaller).
template <class GroupFn>
HWY_INLINE void for_row_groups(size_t n, size_t cols, size_t y_stride, const float* x, float* y,
                               const GroupFn& group) {
  size_t i = 0;
  for (; i + kRowGroup <= n; i += kRowGroup) {
    group(std::integral_constant<size_t, kRowGroup>(), x + i * cols, y + i * y_stride);
  }
  switch (n - i) {
    case 3: group(std::integral_constant<size_t, 3>(), x + i * cols, y + i * y_stride); break;
    case 2: group(std::integral_constant<size_t, 2>(), x + i * cols, y + i * y_stride); break;
    case 1: group(std::integral_constant<size_t, 1>(), x + i * cols, y + i * y_stride); break;
    default: break;
  }
}

// Weight rows are taken in panels small enough to stay in L2 while every row group of x
// passes over them: x then streams from memory once per panel instead of once per weight
// row, and each weight byte is still read from memory once per call.
constexpr size_t kPanelBytes = 128 * 1024;

// Calls dot(tag, weight row bytes, x group, y group) for every weight row in [r0, r1) and
// every row group of x.
template <class DotFn>
HWY_INLINE void matmul_panels(const model::TensorView& w, const float* x, size_t n, float* y,
                              size_t r0, size_t r1, const DotFn& dot) {
  const size_t cols = size_t(w.cols);
  const size_t panel = std::max<size_t>(1, kPanelBytes / model::row_bytes(w.dtype, cols));
  for (size_t p0 = r0; p0 < r1; p0 += panel) {
    const size_t p1 = std::min(r1, p0 + panel);
    for_row_groups(n, cols, size_t(w.rows), x, y, [&](auto tag, const float* xg, float* yg) {
      for (size_t r = p0; r < p1; ++r) dot(tag, w.row(int64_t(r)), xg, yg + r);
    });
  }
}

void MatmulRowsF32(const model::TensorView& w, const float* x, size_t n, float* y, size_t r0,
                   size_t r1) {
  const size_t cols = size_t(w.cols), y_stride = size_t(w.rows);
  matmul_panels(w, x, n, y, r0, r1,
                [&](auto tag, const std::byte* row, const float* xg, float* yg) {
                  const F32Weights weights{reinterpret_cast<const float*>(row)};
                  dot_group<decltype(tag)::value>(weights, cols, xg, cols, yg, y_stride);
                });
}

void MatmulRowsF16(const model::TensorView& w, const float* x, size_t n, float* y, size_t r0,
                   size_t r1) {
  const size_t cols = size_t(w.cols), y_stride = size_t(w.rows);
  matmul_panels(w, x, n, y, r0, r1,
                [&](auto tag, const std::byte* row, const float* xg, float* yg) {
                  const F16Weights weights{reinterpret_cast<const uint16_t*>(row)};
                  dot_group<decltype(tag)::value>(weights, cols, xg, cols, yg, y_stride);
                });
}

void MatmulRowsBF16(const model::TensorView& w, const float* x, size_t n, float* y, size_t r0,
                    size_t r1) {
  const size_t cols = size_t(w.cols), y_stride = size_t(w.rows);
  matmul_panels(w, x, n, y, r0, r1,
                [&](auto tag, const std::byte* row, const float* xg, float* yg) {
                  const BF16Weights weights{reinterpret_cast<const uint16_t*>(row)};
                  dot_group<decltype(tag)::value>(weights, cols, xg, cols, yg, y_stride);
                });
}

void MatmulRowsQ8(const model::TensorView& w, const float* x, size_t n, float* y, size_t r0,
                  size_t r1) {
  const size_t cols = size_t(w.cols), y_stride = size_t(w.rows);
  matmul_panels(w, x, n, y, r0, r1,
                [&](auto tag, const std::byte* row, const float* xg, float* yg) {
                  const auto* blocks = reinterpret_cast<const model::Q8Block*>(row);
                  dot_group_q8<decltype(tag)::value>(blocks, cols, xg, cols, yg, y_stride);
                });
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(MatmulRowsF32);
HWY_EXPORT(MatmulRowsF16);
HWY_EXPORT(MatmulRowsBF16);
HWY_EXPORT(MatmulRowsQ8);

void matmul(const model::TensorView& w, const float* x, size_t n, float* y, ThreadPool& pool) {
  require(w.dtype != model::DType::q8_0 || w.cols % model::kQ8BlockValues == 0, Status::internal,
          "Q8_0 matrix " + w.name + " has a row length not a multiple of 32");
  pool.parallel_for(size_t(w.rows), [&](size_t r0, size_t r1) {
    switch (w.dtype) {
      case model::DType::f32: HWY_DYNAMIC_DISPATCH(MatmulRowsF32)(w, x, n, y, r0, r1); break;
      case model::DType::f16: HWY_DYNAMIC_DISPATCH(MatmulRowsF16)(w, x, n, y, r0, r1); break;
      case model::DType::bf16: HWY_DYNAMIC_DISPATCH(MatmulRowsBF16)(w, x, n, y, r0, r1); break;
      case model::DType::q8_0: HWY_DYNAMIC_DISPATCH(MatmulRowsQ8)(w, x, n, y, r0, r1); break;
    }
  });
}

void dequantize_row(const model::TensorView& w, int64_t r, float* out) {
  const std::byte* row = w.row(r);
  const size_t cols = size_t(w.cols);
  switch (w.dtype) {
    case model::DType::f32: std::memcpy(out, row, cols * sizeof(float)); break;
    case model::DType::f16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row);
      for (size_t i = 0; i < cols; ++i) out[i] = model::f16_to_f32(h[i]);
      break;
    }
    case model::DType::bf16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row);
      for (size_t i = 0; i < cols; ++i) out[i] = model::bf16_to_f32(h[i]);
      break;
    }
    case model::DType::q8_0: {
      const auto* blocks = reinterpret_cast<const model::Q8Block*>(row);
      for (size_t i = 0; i < cols; ++i) {
        const model::Q8Block& b = blocks[i / model::kQ8BlockValues];
        out[i] = model::f16_to_f32(b.d) * float(b.q[i % model::kQ8BlockValues]);
      }
      break;
    }
  }
}

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

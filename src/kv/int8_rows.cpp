// Compiled once per SIMD target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kv/int8_rows.cpp"
#include "kv/int8_rows.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include <cmath>

#include "kernels/common/int8.cuh"

HWY_BEFORE_NAMESPACE();
namespace parley::kv {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// max|x| over the row (exact in any order), or NaN when a value is not finite.
float finite_amax(const float* x, size_t n, size_t body) {
  const hn::ScalableTag<float> df;
  auto amax = hn::Zero(df);
  auto finite = hn::FirstN(df, hn::Lanes(df));
  for (size_t i = 0; i < body; i += hn::Lanes(df)) {
    const auto v = hn::LoadU(df, x + i);
    finite = hn::And(finite, hn::IsFinite(v));
    amax = hn::Max(amax, hn::Abs(v));
  }
  if (!hn::AllTrue(df, finite)) return NAN;
  float m = body > 0 ? hn::GetLane(hn::MaxOfLanes(df, amax)) : 0.0f;
  for (size_t i = body; i < n; ++i) {
    if (!std::isfinite(x[i])) return NAN;
    m = std::fmax(m, std::fabs(x[i]));
  }
  return m;
}

float QuantizeInt8Row(const float* x, size_t n, int8_t* q) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t lanes = hn::Lanes(df);
  const size_t body = n / lanes * lanes;
  const float amax = finite_amax(x, n, body);
  if (std::isnan(amax)) return kernels::quantize_int8(x, int(n), q);
  const float scale = kernels::int8_scale(amax);
  const float inv = kernels::int8_inverse_scale(scale);
  const auto vinv = hn::Set(df, inv);
  const auto lo = hn::Set(di, -127), hi = hn::Set(di, 127);
  // Rounding to nearest even in the vector unit, as rintf does in the scalar definition.
  for (size_t i = 0; i < body; i += lanes) {
    const auto r = hn::NearestInt(hn::Mul(hn::LoadU(df, x + i), vinv));
    hn::StoreU(hn::DemoteTo(d8, hn::Min(hi, hn::Max(lo, r))), d8, q + i);
  }
  for (size_t i = body; i < n; ++i) q[i] = kernels::quantize_int8_value(x[i], inv);
  return scale;
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::kv
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::kv {

HWY_EXPORT(QuantizeInt8Row);

float quantize_int8_row(const float* x, size_t n, int8_t* q) {
  return HWY_DYNAMIC_DISPATCH(QuantizeInt8Row)(x, n, q);
}

}  // namespace parley::kv
#endif  // HWY_ONCE

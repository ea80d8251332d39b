// Compiled once per SIMD target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/ops_swiglu.cpp"
#include "backend/cpu/ops_swiglu.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway's Exp is valid up to +104; exp(88) already makes silu(-88) a denormal-sized -0.
constexpr float kMaxExpArgument = 88.0f;

template <class D>
HWY_INLINE void swiglu_vec(D d, const float* gate, const float* up, float* out) {
  const auto g = hn::LoadU(d, gate);
  const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, kMaxExpArgument)));
  const auto silu = hn::Div(g, hn::Add(hn::Set(d, 1.0f), e));
  hn::StoreU(hn::Mul(silu, hn::LoadU(d, up)), d, out);
}

void SwigluRows(const float* gate, const float* up, size_t n, float* out) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;  // the same formula, one lane at a time, for the tail
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) swiglu_vec(d, gate + i, up + i, out + i);
  for (; i < n; ++i) swiglu_vec(d1, gate + i, up + i, out + i);
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(SwigluRows);

void swiglu(const float* gate, const float* up, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SwigluRows)(gate, up, n, out);
}

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

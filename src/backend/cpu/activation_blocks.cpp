// Compiled once per SIMD target (foreach_target.h re-includes this file). Every target gives
// the same bits: the block maximum is exact, the product x * (32767 / amax) is one IEEE
// multiply, and its rounding is to nearest even, as nearbyint's default mode.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/activation_blocks.cpp"
#include "backend/cpu/activation_blocks.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include <limits>

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most one block per vector, so that a block is a whole number of vectors on any target.
using DF = hn::CappedTag<float, ActivationBlocks::kBlock>;
using DI = hn::Rebind<int32_t, DF>;
using D16 = hn::Rebind<int16_t, DF>;

void quantize_block(const float* x, int16_t* q, float* scale, float* sum) {
  const DF df;
  const D16 d16;
  const size_t lanes = hn::Lanes(df);
  auto amax = hn::Zero(df);
  auto finite = hn::FirstN(df, lanes);  // all true
  for (size_t k = 0; k < ActivationBlocks::kBlock; k += lanes) {
    const auto v = hn::LoadU(df, x + k);
    finite = hn::And(finite, hn::IsFinite(v));
    amax = hn::Max(amax, hn::Abs(v));
  }
  const float block_max = hn::GetLane(hn::MaxOfLanes(df, amax));
  if (!hn::AllTrue(df, finite) || block_max == 0.0f) {
    *scale = hn::AllTrue(df, finite) ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    *sum = *scale;  // 0 or NaN
    for (size_t k = 0; k < ActivationBlocks::kBlock; k += lanes) {
      hn::StoreU(hn::Zero(d16), d16, q + k);
    }
    return;
  }
  *scale = block_max / ActivationBlocks::kMax;
  // |x * inv| <= 32767 up to one rounding of the product, which cannot carry it past 32767.5.
  const auto inv = hn::Set(df, ActivationBlocks::kMax / block_max);
  auto total = hn::Zero(DI());  // |sum| <= 32 * 32767: exact in int32 and in float
  for (size_t k = 0; k < ActivationBlocks::kBlock; k += lanes) {
    const auto rounded = hn::NearestInt(hn::Mul(hn::LoadU(df, x + k), inv));
    total = hn::Add(total, rounded);
    hn::StoreU(hn::DemoteTo(d16, rounded), d16, q + k);
  }
  *sum = *scale * float(hn::GetLane(hn::SumOfLanes(DI(), total)));
}

void QuantizeActivations(const float* x, size_t n, size_t cols, ActivationBlocks& out) {
  const size_t blocks = cols / ActivationBlocks::kBlock;
  out.n = n;
  out.cols = cols;
  out.q.resize(n * cols);
  out.scale.resize(n * blocks + ActivationBlocks::kScalePadding);
  out.sum.resize(n * blocks + ActivationBlocks::kScalePadding);
  for (size_t i = 0; i < n; ++i) {
    for (size_t b = 0; b < blocks; ++b) {
      const size_t k = i * cols + b * ActivationBlocks::kBlock;
      const size_t at = i * blocks + b;
      quantize_block(x + k, out.q.data() + k, out.scale.data() + at, out.sum.data() + at);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(QuantizeActivations);

void quantize_activations(const float* x, size_t n, size_t cols, ActivationBlocks& out) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(x, n, cols, out);
}

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

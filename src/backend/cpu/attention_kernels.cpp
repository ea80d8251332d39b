// Compiled once per SIMD target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/attention_kernels.cpp"
#include "backend/cpu/attention_kernels.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Where one (layer, KV head)'s rows sit in every block: offsets of slot 0 and the distance
// between consecutive slots, for K, V and (INT8) their scales.
struct HeadPlacement {
  size_t k, v, k_scale, v_scale;
  size_t slot_stride, scale_stride;

  HeadPlacement(const kv::BlockLayout& l, int32_t layer, int32_t head)
      : k(l.k_offset(layer, 0, head)),
        v(l.v_offset(layer, 0, head)),
        k_scale(l.type() == kv::KvType::int8 ? l.k_scale_offset(layer, 0, head) : 0),
        v_scale(l.type() == kv::KvType::int8 ? l.v_scale_offset(layer, 0, head) : 0),
        slot_stride(l.k_offset(layer, 1, head) - k),
        scale_stride(l.type() == kv::KvType::int8
                         ? l.k_scale_offset(layer, 1, head) - k_scale
                         : 0) {}
};

// Row readers: Lanes(d) stored values from element i as floats (unscaled), and the row scale.
struct Int8Row {
  template <class D>
  static HWY_INLINE hn::Vec<D> load(D d, const std::byte* row, size_t i) {
    const hn::Rebind<int8_t, D> d8;
    const hn::Rebind<int32_t, D> di;
    return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(row) + i)));
  }
  static HWY_INLINE float scale(const std::byte* scale_ptr) {
    float s;
    std::memcpy(&s, scale_ptr, sizeof s);
    return s;
  }
};

struct F16Row {
  template <class D>
  static HWY_INLINE hn::Vec<D> load(D d, const std::byte* row, size_t i) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + i));
  }
  static HWY_INLINE float scale(const std::byte*) { return 1.0f; }
};

struct F32Row {
  template <class D>
  static HWY_INLINE hn::Vec<D> load(D d, const std::byte* row, size_t i) {
    return hn::LoadU(d, reinterpret_cast<const float*>(row) + i);
  }
  static HWY_INLINE float scale(const std::byte*) { return 1.0f; }
};

// exp(x - max) of n scores in place; returns their sum. The tail uses the same Exp on one lane.
template <class D>
HWY_INLINE float exp_and_sum(D d, float* s, size_t n, float max) {
  const hn::CappedTag<float, 1> d1;
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + i), hn::Set(d, max)));
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  float total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < n; ++i) {
    s[i] = hn::GetLane(hn::Exp(d1, hn::Set(d1, s[i] - max)));
    total += s[i];
  }
  return total;
}

template <class D>
HWY_INLINE float max_of(D d, const float* s, size_t n) {
  auto m = hn::Set(d, -INFINITY);
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) m = hn::Max(m, hn::LoadU(d, s + i));
  float best = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; i < n; ++i) best = std::fmax(best, s[i]);
  return best;
}

// D's lane count divides head_dim.
template <class Row, class D>
void attend(D d, const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  const size_t hd = size_t(kv.shape().head_dim);
  const size_t lanes = hn::Lanes(d);
  const size_t n = job.last - job.first + 1;
  const size_t group = size_t(job.group);
  scratch.resize(group * n + hd + group);
  float* scores = scratch.data();   // [group][n]
  float* row = scores + group * n;  // one K or V row as floats
  float* inv_sum = row + hd;        // [group]
  const HeadPlacement at(kv.layout(), job.layer, job.kv_head);
  const float inv_sqrt = 1.0f / std::sqrt(float(hd));

  for (uint32_t t = job.first; t <= job.last; ++t) {
    const std::byte* block = kv.block_data(t);
    const size_t slot = t % kv::kBlockTokens;
    const std::byte* k = block + at.k + slot * at.slot_stride;
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(Row::load(d, k, i), d, row + i);
    const float scale = Row::scale(block + at.k_scale + slot * at.scale_stride) * inv_sqrt;
    for (size_t g = 0; g < group; ++g) {
      const float* qg = job.q + g * hd;
      auto acc = hn::Zero(d);
      for (size_t i = 0; i < hd; i += lanes) {
        acc = hn::MulAdd(hn::LoadU(d, qg + i), hn::LoadU(d, row + i), acc);
      }
      scores[g * n + (t - job.first)] = hn::GetLane(hn::SumOfLanes(d, acc)) * scale;
    }
  }

  for (size_t g = 0; g < group; ++g) {
    float* sg = scores + g * n;
    inv_sum[g] = 1.0f / exp_and_sum(d, sg, n, max_of(d, sg, n));
    float* og = job.out + g * hd;
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(hn::Zero(d), d, og + i);
  }

  for (uint32_t t = job.first; t <= job.last; ++t) {
    const std::byte* block = kv.block_data(t);
    const size_t slot = t % kv::kBlockTokens;
    const std::byte* v = block + at.v + slot * at.slot_stride;
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(Row::load(d, v, i), d, row + i);
    const float scale = Row::scale(block + at.v_scale + slot * at.scale_stride);
    for (size_t g = 0; g < group; ++g) {
      const auto p = hn::Set(d, scores[g * n + (t - job.first)] * scale);
      float* og = job.out + g * hd;
      for (size_t i = 0; i < hd; i += lanes) {
        hn::StoreU(hn::MulAdd(p, hn::LoadU(d, row + i), hn::LoadU(d, og + i)), d, og + i);
      }
    }
  }

  for (size_t g = 0; g < group; ++g) {
    const auto inv = hn::Set(d, inv_sum[g]);
    float* og = job.out + g * hd;
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(hn::Mul(inv, hn::LoadU(d, og + i)), d, og + i);
  }
}

// The widest vector whose lane count divides head_dim (even, so two lanes always do).
template <class Row>
void attend_any_width(const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  const size_t hd = size_t(kv.shape().head_dim);
  const hn::ScalableTag<float> full;
  if (hd % hn::Lanes(full) == 0) return attend<Row>(full, job, kv, scratch);
  if (hd % 8 == 0) return attend<Row>(hn::CappedTag<float, 8>(), job, kv, scratch);
  if (hd % 4 == 0) return attend<Row>(hn::CappedTag<float, 4>(), job, kv, scratch);
  if (hd % 2 == 0) return attend<Row>(hn::CappedTag<float, 2>(), job, kv, scratch);
  return attend<Row>(hn::CappedTag<float, 1>(), job, kv, scratch);
}

void AttendGroup(const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  switch (kv.type()) {
    case kv::KvType::int8: attend_any_width<Int8Row>(job, kv, scratch); break;
    case kv::KvType::f16: attend_any_width<F16Row>(job, kv, scratch); break;
    case kv::KvType::f32: attend_any_width<F32Row>(job, kv, scratch); break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(AttendGroup);

void attend_group(const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  HWY_DYNAMIC_DISPATCH(AttendGroup)(job, kv, scratch);
}

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

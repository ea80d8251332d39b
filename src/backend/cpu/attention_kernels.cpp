// Compiled once per SIMD target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/attention_kernels.cpp"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/prefetch_hints.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
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
    const auto* values = reinterpret_cast<const int8_t*>(row) + i;
    return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, values)));
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

// Positions ahead whose K and V rows the score pass asks for. One head's rows are a few cache
// lines each, scattered over blocks and strided within one (all heads of a slot sit side by
// side), which the hardware prefetcher does not follow; without the hint a long context is
// read at memory latency, one row at a time. V is asked for here too, into L2 only: the
// weighted sum reads it after the whole score pass, and in L1 it would displace K lines still
// to come (stories110m Q8_0 decode on 2 threads, tokens alternated: attention 1.07-1.18x
// faster at 128-896 tokens of context than with V into L1, together with the one value pass
// of a 3-head job). 32 positions (a few hundred nanoseconds of work for one head) read a
// 900-position stories110m context 10-15 % faster than 16 on 2 threads; 64 was no faster.
constexpr uint32_t kPrefetchPositions = 32;

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

// The job's KV heads first .. first + count - 1 (counted from job.kv_head): rows and scales of
// neighbouring heads sit side by side in a slot.
struct HeadSpan {
  size_t first = 0;
  size_t count = 1;
};

// Asks for the K (when k_too) and V rows of position t of the span's heads, and their scales:
// for the score pass (k_too) K into L1 and V into L2, for the weighted sum V into L1. Always
// inlined, and not a lambda: GCC sees a function that only prefetches as free of side
// effects and deletes a call to it that it left out of line
// (tests/unit/backend/check_prefetch_hints.cmake).
HWY_INLINE void prefetch_position(const kv::KvView& kv, const HeadPlacement& at, uint32_t t,
                                  size_t row_bytes, HeadSpan span, bool scaled, bool k_too) {
  const std::byte* block = kv.block_data(t);
  const size_t slot = t % kv::kBlockTokens;
  const size_t rows = span.first * row_bytes + slot * at.slot_stride;
  const size_t scales = span.first * sizeof(float) + slot * at.scale_stride;
  if (k_too) {
    prefetch_bytes(block + at.k + rows, span.count * row_bytes);
    if (scaled) prefetch_bytes(block + at.k_scale + scales, span.count * sizeof(float));
  }
  prefetch_bytes(block + at.v + rows, span.count * row_bytes, k_too);
  if (scaled) prefetch_bytes(block + at.v_scale + scales, span.count * sizeof(float), k_too);
}

// Asks for the K (when k_too) and V rows of position t into L2 (prefetch_hints.h), twice as
// far ahead as prefetch_position: stories110m Q8_0 decode at 900 tokens of context 5.3 -> 4.9
// ms per token on 2 threads (4x as far: no faster).
HWY_INLINE void prefetch_position_far(const kv::KvView& kv, const HeadPlacement& at, uint32_t t,
                                      size_t row_bytes, HeadSpan span, bool k_too) {
  const std::byte* block = kv.block_data(t);
  const size_t rows = span.first * row_bytes + t % kv::kBlockTokens * at.slot_stride;
  for (size_t line = 0; line < span.count * row_bytes; line += 64) {
    if (k_too) prefetch_to_l2(block + at.k + rows + line);
    prefetch_to_l2(block + at.v + rows + line);
  }
}

// Calls fn(t, block, slot) for positions first..last in order, looking up each block once,
// with the span's rows kPrefetchPositions ahead asked for (K and V, or V only), and those
// twice as far into L2.
template <class Fn>
HWY_INLINE void visit_positions(const GroupJob& job, const kv::KvView& kv,
                                const HeadPlacement& at, size_t row_bytes, HeadSpan span,
                                bool scaled, bool k_too, const Fn& fn) {
  constexpr uint32_t kFar = 2 * kPrefetchPositions;
  for (uint32_t t = job.first; t <= job.last && t - job.first < kFar; ++t) {
    if (t - job.first < kPrefetchPositions) {
      prefetch_position(kv, at, t, row_bytes, span, scaled, k_too);
    } else {
      prefetch_position_far(kv, at, t, row_bytes, span, k_too);
    }
  }
  uint32_t t = job.first;
  while (t <= job.last) {
    const std::byte* block = kv.block_data(t);
    const uint32_t block_last = std::min(job.last, t - t % kv::kBlockTokens + kv::kBlockTokens - 1);
    for (; t <= block_last; ++t) {
      if (job.last - t >= kPrefetchPositions) {
        prefetch_position(kv, at, t + kPrefetchPositions, row_bytes, span, scaled, k_too);
      }
      if (job.last - t >= kFar) prefetch_position_far(kv, at, t + kFar, row_bytes, span, k_too);
      fn(t, block, t % kv::kBlockTokens);
    }
  }
}

// The heads of a job, row by row and within a row by KV head: head h is query head
// h % group of KV head h % per_row() / group (counted from job.kv_head) in row h / per_row().
struct JobHeads {
  const GroupJob& job;
  size_t hd;
  size_t n;  // positions of the last row

  size_t per_row() const { return size_t(job.kv_heads) * size_t(job.group); }
  size_t count() const { return size_t(job.rows) * per_row(); }
  size_t kv_head(size_t h) const { return h % per_row() / size_t(job.group); }
  size_t offset(size_t h) const { return h / per_row() * job.row_stride + h % per_row() * hd; }
  float* out(size_t h) const { return job.out + offset(h); }
  HeadSpan all_kv_heads() const { return {0, size_t(job.kv_heads)}; }

  // fn(h, offset of head h's q and out) for every head of KV head c in order, without a
  // division per head (the loops that run once per position use this).
  template <class Fn>
  HWY_INLINE void each_of(size_t c, const Fn& fn) const {
    const size_t g_count = size_t(job.group);
    for (size_t r = 0, row = 0; r < size_t(job.rows); ++r, row += job.row_stride) {
      size_t h = r * per_row() + c * g_count;
      for (size_t g = 0; g < g_count; ++g, ++h) fn(h, row + (c * g_count + g) * hd);
    }
  }
  // Whether heads g0 .. g0 + g_count - 1 all read one KV head.
  bool share_kv_head(size_t g0, size_t g_count) const {
    for (size_t h = g0 + 1; h < g0 + g_count; ++h) {
      if (kv_head(h) != kv_head(g0)) return false;
    }
    return true;
  }
  // Positions head h attends: earlier rows see fewer.
  size_t length(size_t h) const { return n - (size_t(job.rows) - 1 - h / per_row()); }
};

// exp(s - max) over each head's own positions, as attending its row alone would take them;
// the positions past them get weight 0, so the weighted sums over all positions add exact
// zeros for them. inv_sum[h] = 1 / the head's sum.
template <class D>
HWY_INLINE void softmax_heads(D d, const JobHeads& heads, float* scores, float* inv_sum) {
  for (size_t h = 0; h < heads.count(); ++h) {
    float* sh = scores + h * heads.n;
    const size_t len = heads.length(h);
    inv_sum[h] = 1.0f / exp_and_sum(d, sh, len, max_of(d, sh, len));
    std::fill(sh + len, sh + heads.n, 0.0f);
  }
}

// Lane i of the result = the sum of the lanes of v[i], for Lanes(d) vectors (a power-of-two
// count), which it overwrites: each level adds neighbouring lanes of two vectors into one,
// halving the vectors and doubling how many lanes each lane has summed. About three
// operations per vector instead of a full horizontal sum for each.
template <class D>
HWY_INLINE hn::Vec<D> lane_totals(D d, hn::Vec<D>* v) {
#if HWY_TARGET != HWY_SCALAR  // one lane: nothing to add (and no Concat ops)
  for (size_t width = hn::Lanes(d); width > 1; width /= 2) {
    for (size_t i = 0; i < width / 2; ++i) {
      v[i] = hn::Add(hn::ConcatEven(d, v[2 * i + 1], v[2 * i]),
                     hn::ConcatOdd(d, v[2 * i + 1], v[2 * i]));
    }
  }
#else
  (void)d;
#endif
  return v[0];
}

// Accumulator vectors the weighted sum of V keeps in registers: AVX-512 has 32 vector
// registers, narrower targets 16 (the V row and the weight need some of the rest).
constexpr size_t kAccumulatorVectors = HWY_TARGET <= HWY_AVX3 ? 16 : 8;

// out_h = sum_t p_h(t) v_t * inv_sum[h] for heads g0 .. g0 + G of the job, head_dim = NV
// vectors: the accumulators stay in registers over every position. Shared: the G heads use one
// KV head, whose V row is converted once per position for all of them.
template <size_t NV, size_t G, bool Shared, class Row, class D>
HWY_INLINE void weighted_values(D d, const JobHeads& heads, const kv::KvView& kv,
                                const HeadPlacement& at, size_t row_bytes, const float* scores,
                                size_t g0, const float* inv_sum) {
  const GroupJob& job = heads.job;
  const size_t n = heads.n;
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);
  const bool scaled = kv.type() == kv::KvType::int8;
  size_t rows[G], scales[G];  // where each head's V row and scale sit, past the slot's
  size_t lowest = heads.kv_head(g0), highest = lowest;
  for (size_t g = 0; g < G; ++g) {
    const size_t c = heads.kv_head(g0 + g);
    rows[g] = at.v + c * row_bytes;
    scales[g] = at.v_scale + c * sizeof(float);
    lowest = std::min(lowest, c);
    highest = std::max(highest, c);
  }
  V acc[G][NV];
  HWY_UNROLL(16)
  for (size_t g = 0; g < G; ++g) {
    HWY_UNROLL(8)
    for (size_t j = 0; j < NV; ++j) acc[g][j] = hn::Zero(d);
  }
  const HeadSpan span{lowest, highest - lowest + 1};
  visit_positions(job, kv, at, row_bytes, span, scaled, false,
                  [&](uint32_t t, const std::byte* block, size_t slot) HWY_ATTR {
                    const std::byte* slot_rows = block + slot * at.slot_stride;
                    const std::byte* slot_scales = block + slot * at.scale_stride;
                    const size_t i = t - job.first;
                    V row[NV];
                    float scale = 0.0f;
                    HWY_UNROLL(16)
                    for (size_t g = 0; g < G; ++g) {
                      if (!Shared || g == 0) {
                        HWY_UNROLL(8)
                        for (size_t j = 0; j < NV; ++j) {
                          row[j] = Row::load(d, slot_rows + rows[g], j * lanes);
                        }
                        scale = Row::scale(slot_scales + scales[g]);
                      }
                      const V p = hn::Set(d, scores[(g0 + g) * n + i] * scale);
                      HWY_UNROLL(8)
                      for (size_t j = 0; j < NV; ++j) acc[g][j] = hn::MulAdd(p, row[j], acc[g][j]);
                    }
                  });
  HWY_UNROLL(16)
  for (size_t g = 0; g < G; ++g) {
    const V inv = hn::Set(d, inv_sum[g0 + g]);
    float* og = heads.out(g0 + g);
    HWY_UNROLL(8)
    for (size_t j = 0; j < NV; ++j) hn::StoreU(hn::Mul(inv, acc[g][j]), d, og + j * lanes);
  }
}

// weighted_values for heads g0 .. count - 1 of the job: passes of G heads while that many are
// left, then of fewer, so that few passes over the positions remain however many heads a job
// has: a job of up to 4 heads takes one.
template <size_t NV, size_t G, class Row, class D>
HWY_INLINE void values_in_passes(D d, const JobHeads& heads, const kv::KvView& kv,
                                 const HeadPlacement& at, size_t row_bytes, const float* scores,
                                 size_t g0, const float* inv_sum) {
  for (; g0 + G <= heads.count(); g0 += G) {
    if (heads.share_kv_head(g0, G)) {
      weighted_values<NV, G, true, Row>(d, heads, kv, at, row_bytes, scores, g0, inv_sum);
    } else {
      weighted_values<NV, G, false, Row>(d, heads, kv, at, row_bytes, scores, g0, inv_sum);
    }
  }
  if constexpr (G > 1) {
    // Down by one from 4 (3 heads: one pass, not two), by halves above (fewer instances).
    constexpr size_t kNext = G > 4 ? G / 2 : G - 1;
    if (g0 < heads.count()) {
      values_in_passes<NV, kNext, Row>(d, heads, kv, at, row_bytes, scores, g0, inv_sum);
    }
  }
}

// head_dim = NV vectors of D, known at compile time. The K rows of `lanes` positions are
// converted once into a small buffer; then each head takes their dot products with its q in
// registers, one vector of partial products per position, and sums those across lanes
// together (lane_totals). V rows are converted into registers once per G heads.
// kDirect (each K row serves one head: one query row, one query head per KV head): the heads
// convert the rows where they lie in the cache instead, as they multiply; a buffer would
// only add a store and a load of every value. The floats multiplied are the same either way.
template <size_t NV, class Row, bool kDirect, class D>
void attend_fixed_rows(D d, const GroupJob& job, const kv::KvView& kv,
                       std::vector<float>& scratch) {
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kLanes = hn::MaxLanes(D());  // the same on x86: no scalable vectors
  HWY_DASSERT(lanes == kLanes);
  const size_t hd = NV * lanes;
  const JobHeads heads{job, hd, size_t(job.last - job.first + 1)};
  const size_t n = heads.n;
  const size_t count = heads.count();  // every head of every row
  const size_t kv_heads = size_t(job.kv_heads);
  const size_t row_bytes = hd * kv.layout().element_bytes();
  // The buffer of converted K rows, or (kDirect) a run of zero bytes as long as a slot's rows
  // of the job's KV heads, which stands for the positions past the last one.
  const size_t k_rows = kDirect ? (kv_heads * row_bytes + sizeof(float) - 1) / sizeof(float)
                                : kv_heads * lanes * hd;
  scratch.resize(count * n + count + k_rows + kv_heads * lanes + lanes);
  float* scores = scratch.data();           // [head][n]
  float* inv_sum = scores + count * n;      // [head]
  float* k_block = inv_sum + count;         // [KV head][lanes positions][hd], unscaled
  float* k_scales = k_block + k_rows;       // [KV head][lanes positions]
  float* totals = k_scales + kv_heads * lanes;  // [lanes]
  if constexpr (kDirect) std::fill(k_block, k_block + k_rows, 0.0f);
  const std::byte* k_at[kLanes];  // kDirect: where the slot's rows of each position lie
  const HeadPlacement at(kv.layout(), job.layer, job.kv_head);
  const float inv_sqrt = 1.0f / std::sqrt(float(hd));
  const bool scaled = kv.type() == kv::KvType::int8;
  // Lanes values of the K row of position i (of the current run) for KV head c, from
  // element j.
  const auto k_values = [&](size_t c, size_t i, size_t j) HWY_ATTR {
    if constexpr (kDirect) {
      return Row::load(d, k_at[i] + c * row_bytes, j);
    } else {
      return hn::LoadU(d, k_block + (c * lanes + i) * hd + j);
    }
  };

  // Scores of the `filled` positions from i0 on, for every head. Lane i of the totals sums
  // position i's products only; in a last, partial run the rows past `filled` are zeroed so
  // that no stale or uninitialized floats enter the products.
  size_t filled = 0, i0 = 0;
  const auto flush = [&]() HWY_ATTR {
    if constexpr (kDirect) {
      std::fill(k_at + filled, k_at + kLanes, reinterpret_cast<const std::byte*>(k_block));
    } else {
      for (size_t c = 0; c < kv_heads; ++c) {
        float* rest = k_block + (c * lanes + filled) * hd;
        std::fill(rest, rest + (lanes - filled) * hd, 0.0f);
      }
    }
    for (size_t h = 0; h < count; ++h) {
      const float* qh = job.q + heads.offset(h);
      const size_t c = heads.kv_head(h);
      V partial[kLanes];
      const V q0 = hn::LoadU(d, qh);
      HWY_UNROLL(16)
      for (size_t i = 0; i < kLanes; ++i) partial[i] = hn::Mul(q0, k_values(c, i, 0));
      HWY_UNROLL(8)
      for (size_t j = 1; j < NV; ++j) {
        const V qj = hn::LoadU(d, qh + j * lanes);
        HWY_UNROLL(16)
        for (size_t i = 0; i < kLanes; ++i) {
          partial[i] = hn::MulAdd(qj, k_values(c, i, j * lanes), partial[i]);
        }
      }
      const V sums = hn::Mul(lane_totals(d, partial), hn::LoadU(d, k_scales + c * lanes));
      if (filled == lanes) {
        hn::StoreU(sums, d, scores + h * n + i0);
      } else {
        hn::StoreU(sums, d, totals);
        std::copy(totals, totals + filled, scores + h * n + i0);
      }
    }
    i0 += filled;
    filled = 0;
  };
  visit_positions(job, kv, at, row_bytes, heads.all_kv_heads(), scaled, true,
                  [&](uint32_t, const std::byte* block, size_t slot) HWY_ATTR {
                    const std::byte* k = block + at.k + slot * at.slot_stride;
                    const std::byte* k_scale = block + at.k_scale + slot * at.scale_stride;
                    if constexpr (kDirect) k_at[filled] = k;
                    for (size_t c = 0; c < kv_heads; ++c, k += row_bytes) {
                      if constexpr (!kDirect) {
                        float* to = k_block + (c * lanes + filled) * hd;
                        HWY_UNROLL(8)
                        for (size_t j = 0; j < NV; ++j) {
                          hn::StoreU(Row::load(d, k, j * lanes), d, to + j * lanes);
                        }
                      }
                      k_scales[c * lanes + filled] =
                          Row::scale(k_scale + c * sizeof(float)) * inv_sqrt;
                    }
                    if (++filled == lanes) flush();
                  });
  if (filled > 0) flush();
  softmax_heads(d, heads, scores, inv_sum);

  constexpr size_t kHeads = kAccumulatorVectors / NV > 0 ? kAccumulatorVectors / NV : 1;
  values_in_passes<NV, kHeads, Row>(d, heads, kv, at, row_bytes, scores, 0, inv_sum);
}

template <size_t NV, class Row, class D>
void attend_fixed(D d, const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  if (job.group == 1 && job.rows == 1) {
    attend_fixed_rows<NV, Row, true>(d, job, kv, scratch);
  } else {
    attend_fixed_rows<NV, Row, false>(d, job, kv, scratch);
  }
}

// Any head_dim that D's lane count divides: rows converted through a scratch row, in the
// same order of positions (and with the same prefetching) as attend_fixed.
template <class Row, class D>
void attend(D d, const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  const size_t hd = size_t(kv.shape().head_dim);
  const size_t lanes = hn::Lanes(d);
  const JobHeads heads{job, hd, size_t(job.last - job.first + 1)};
  const size_t n = heads.n;
  const size_t count = heads.count();  // every head of every row
  const size_t kv_heads = size_t(job.kv_heads);
  scratch.resize(count * n + hd + count);
  float* scores = scratch.data();   // [head][n]
  float* row = scores + count * n;  // one K or V row as floats
  float* inv_sum = row + hd;        // [head]
  const HeadPlacement at(kv.layout(), job.layer, job.kv_head);
  const float inv_sqrt = 1.0f / std::sqrt(float(hd));
  const size_t row_bytes = hd * kv.layout().element_bytes();
  const bool scaled = kv.type() == kv::KvType::int8;
  // Converts the row of KV head c of a slot (its rows and scales at slot_rows and slot_scales)
  // into `row`; returns the row's scale.
  const auto convert = [&](const std::byte* slot_rows, const std::byte* slot_scales,
                           size_t c) HWY_ATTR {
    const std::byte* src = slot_rows + c * row_bytes;
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(Row::load(d, src, i), d, row + i);
    return Row::scale(slot_scales + c * sizeof(float));
  };

  visit_positions(job, kv, at, row_bytes, heads.all_kv_heads(), scaled, true,
                  [&](uint32_t t, const std::byte* block, size_t slot) HWY_ATTR {
                    for (size_t c = 0; c < kv_heads; ++c) {
                      const float scale = convert(block + at.k + slot * at.slot_stride,
                                                  block + at.k_scale + slot * at.scale_stride,
                                                  c) *
                                          inv_sqrt;
                      heads.each_of(c, [&](size_t h, size_t offset) HWY_ATTR {
                        const float* qh = job.q + offset;
                        auto acc = hn::Zero(d);
                        for (size_t i = 0; i < hd; i += lanes) {
                          acc = hn::MulAdd(hn::LoadU(d, qh + i), hn::LoadU(d, row + i), acc);
                        }
                        scores[h * n + (t - job.first)] =
                            hn::GetLane(hn::SumOfLanes(d, acc)) * scale;
                      });
                    }
                  });

  softmax_heads(d, heads, scores, inv_sum);
  for (size_t h = 0; h < count; ++h) {
    float* oh = heads.out(h);
    for (size_t i = 0; i < hd; i += lanes) hn::StoreU(hn::Zero(d), d, oh + i);
  }

  visit_positions(job, kv, at, row_bytes, heads.all_kv_heads(), scaled, false,
                  [&](uint32_t t, const std::byte* block, size_t slot) HWY_ATTR {
                    for (size_t c = 0; c < kv_heads; ++c) {
                      const float scale = convert(block + at.v + slot * at.slot_stride,
                                                  block + at.v_scale + slot * at.scale_stride, c);
                      heads.each_of(c, [&](size_t h, size_t offset) HWY_ATTR {
                        const auto p = hn::Set(d, scores[h * n + (t - job.first)] * scale);
                        float* oh = job.out + offset;
                        for (size_t i = 0; i < hd; i += lanes) {
                          hn::StoreU(hn::MulAdd(p, hn::LoadU(d, row + i), hn::LoadU(d, oh + i)),
                                     d, oh + i);
                        }
                      });
                    }
                  });

  for (size_t h = 0; h < count; ++h) {
    const auto inv = hn::Set(d, inv_sum[h]);
    float* oh = heads.out(h);
    for (size_t i = 0; i < hd; i += lanes) {
      hn::StoreU(hn::Mul(inv, hn::LoadU(d, oh + i)), d, oh + i);
    }
  }
}

// The widest vector whose lane count divides head_dim (even, so two lanes always do).
template <class Row>
void attend_any_width(const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch) {
  const size_t hd = size_t(kv.shape().head_dim);
  const hn::ScalableTag<float> full;
  if (hd % hn::Lanes(full) == 0) {
    switch (hd / hn::Lanes(full)) {
      case 1: return attend_fixed<1, Row>(full, job, kv, scratch);
      case 2: return attend_fixed<2, Row>(full, job, kv, scratch);
      case 4: return attend_fixed<4, Row>(full, job, kv, scratch);
      case 8: return attend_fixed<8, Row>(full, job, kv, scratch);
      default: return attend<Row>(full, job, kv, scratch);
    }
  }
  if (hd == 8) return attend_fixed<1, Row>(hn::CappedTag<float, 8>(), job, kv, scratch);
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

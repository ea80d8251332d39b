// Online softmax over a stream of scores (FlashAttention / flash-decoding): the running max m,
// the running denominator d, and the weighted sum o of value rows. Two partial states over
// disjoint key ranges merge into the state of their union.
#pragma once

#include <math.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// The factor that carries a sum taken under max m_old over to max m_new >= m_old: 0 for an
// empty state (m_old = -inf), never the NaN of exp(-inf - -inf).
PARLEY_HD float softmax_rescale(float m_old, float m_new) {
  return m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
}

template <int kMaxDim>
struct SoftmaxState {
  float m;  // running max of the scores (-inf while empty)
  float d;  // sum of exp(score - m)
  float o[kMaxDim];

  PARLEY_HD void init(int dim) {
    m = -INFINITY;
    d = 0.0f;
    for (int i = 0; i < dim; ++i) o[i] = 0.0f;
  }

  // Adds one key with score s and value row v.
  PARLEY_HD void push(float s, const float* v, int dim) {
    const float m_new = fmaxf(m, s);
    const float a = expf(m - m_new);  // rescales what was summed so far (0 when empty)
    const float b = expf(s - m_new);
    for (int i = 0; i < dim; ++i) o[i] = o[i] * a + v[i] * b;
    d = d * a + b;
    m = m_new;
  }

  PARLEY_HD void merge(const SoftmaxState& other, int dim) {
    if (other.d == 0.0f) return;
    const float m_new = fmaxf(m, other.m);
    const float a = expf(m - m_new);
    const float b = expf(other.m - m_new);
    for (int i = 0; i < dim; ++i) o[i] = o[i] * a + other.o[i] * b;
    d = d * a + other.d * b;
    m = m_new;
  }

  // The attention output: o / d.
  PARLEY_HD void finish(float* out, int dim) const {
    const float inv = d > 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < dim; ++i) out[i] = o[i] * inv;
  }
};

}  // namespace parley::kernels

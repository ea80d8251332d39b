#include "backend/cpu/ops_norm_rope.h"

#include <cmath>
#include <vector>

#include "kernels/common/rope.cuh"

namespace parley::backend::cpu {

void rmsnorm(const float* x, const float* weight, size_t dim, float eps, float* out) {
  double sum_sq = 0.0;  // double: O(dim) per row, and it keeps long rows free of drift
  for (size_t i = 0; i < dim; ++i) sum_sq += double(x[i]) * double(x[i]);
  const float inv = float(1.0 / std::sqrt(sum_sq / double(dim) + double(eps)));
  for (size_t i = 0; i < dim; ++i) out[i] = x[i] * inv * weight[i];
}

namespace {

void rotate_heads(float* x, int32_t n_heads, int32_t head_dim, const float* cos_t,
                  const float* sin_t) {
  for (int32_t h = 0; h < n_heads; ++h) {
    float* head = x + size_t(h) * size_t(head_dim);
    for (int32_t j = 0; j < head_dim / 2; ++j) {
      const float a = head[2 * j];
      const float b = head[2 * j + 1];
      head[2 * j] = a * cos_t[j] - b * sin_t[j];
      head[2 * j + 1] = a * sin_t[j] + b * cos_t[j];
    }
  }
}

}  // namespace

void rope_rows(float* q, int32_t n_q_heads, float* k, int32_t n_k_heads, int32_t head_dim,
               uint32_t pos, float theta) {
  // The same expressions as kernels::rope_rotate_head, so the tables match it exactly. Every
  // layer of a decode step rotates at the same position: the last table is kept (its sines,
  // cosines and powers cost more than the rotations of a small model's heads).
  struct Table {
    uint32_t pos = 0;
    int32_t head_dim = 0;
    float theta = 0.0f;
    std::vector<float> cos_t, sin_t;
  };
  thread_local Table table;
  if (table.head_dim != head_dim || table.pos != pos || table.theta != theta) {
    table.cos_t.resize(size_t(head_dim / 2));
    table.sin_t.resize(size_t(head_dim / 2));
    for (int32_t j = 0; j < head_dim / 2; ++j) {
      const float angle =
          static_cast<float>(int(pos)) * kernels::rope_inv_freq(j, head_dim, theta);
      table.cos_t[size_t(j)] = cosf(angle);
      table.sin_t[size_t(j)] = sinf(angle);
    }
    table.pos = pos;
    table.head_dim = head_dim;
    table.theta = theta;
  }
  rotate_heads(q, n_q_heads, head_dim, table.cos_t.data(), table.sin_t.data());
  rotate_heads(k, n_k_heads, head_dim, table.cos_t.data(), table.sin_t.data());
}

}  // namespace parley::backend::cpu

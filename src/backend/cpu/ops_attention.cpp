#include "backend/cpu/ops_attention.h"

#include <cmath>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace parley::backend::cpu {
namespace {

// The query heads that share one KV head, for one row: each K and V row is read (and
// dequantized) once and used by every head of the group. Two passes per head: scores, then
// the weighted sum of V.
struct GroupScratch {
  std::vector<float> scores;  // [group][positions]
  std::vector<float> row;     // [head_dim]
};

void attend_group(const float* q, float* out, int32_t group, uint32_t first, uint32_t last,
                  int32_t layer, int32_t kv_head, const kv::KvView& kv, GroupScratch& s) {
  const int32_t head_dim = kv.shape().head_dim;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const size_t n = last - first + 1;
  s.scores.resize(size_t(group) * n);
  s.row.resize(size_t(head_dim));

  for (uint32_t t = first; t <= last; ++t) {
    kv.read_k(layer, t, kv_head, s.row.data());
    for (int32_t g = 0; g < group; ++g) {
      const float* qg = q + size_t(g) * head_dim;
      float dot = 0.0f;
      for (int32_t i = 0; i < head_dim; ++i) dot += qg[i] * s.row[size_t(i)];
      s.scores[size_t(g) * n + (t - first)] = dot * scale;
    }
  }
  std::vector<float> sums(size_t(group), 0.0f);
  for (int32_t g = 0; g < group; ++g) {
    float* sc = &s.scores[size_t(g) * n];
    float max_score = -INFINITY;
    for (size_t i = 0; i < n; ++i) max_score = std::fmax(max_score, sc[i]);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      sc[i] = std::exp(sc[i] - max_score);
      sum += sc[i];
    }
    sums[size_t(g)] = sum;
    float* og = out + size_t(g) * head_dim;
    for (int32_t i = 0; i < head_dim; ++i) og[i] = 0.0f;
  }
  for (uint32_t t = first; t <= last; ++t) {
    kv.read_v(layer, t, kv_head, s.row.data());
    for (int32_t g = 0; g < group; ++g) {
      const float p = s.scores[size_t(g) * n + (t - first)] / sums[size_t(g)];
      float* og = out + size_t(g) * head_dim;
      for (int32_t i = 0; i < head_dim; ++i) og[i] += p * s.row[size_t(i)];
    }
  }
}

}  // namespace

void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool) {
  const int32_t head_dim = kv.shape().head_dim;
  const int32_t n_kv_heads = kv.shape().n_kv_heads;
  const int32_t group = args.n_heads / n_kv_heads;  // query heads per KV head
  const size_t q_row = size_t(args.n_heads) * size_t(head_dim);
  pool.parallel_for(args.n_rows * size_t(n_kv_heads), [&](size_t begin, size_t end) {
    GroupScratch scratch;
    for (size_t task = begin; task < end; ++task) {
      const size_t r = task / size_t(n_kv_heads);
      const int32_t kvh = int32_t(task % size_t(n_kv_heads));
      const uint32_t pos = args.start_pos + uint32_t(r);
      const uint32_t window = uint32_t(args.sliding_window);
      const uint32_t first = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
      // Query heads kvh * group .. kvh * group + group - 1 sit side by side in the row.
      const size_t offset = r * q_row + size_t(kvh) * size_t(group) * size_t(head_dim);
      attend_group(args.q + offset, args.out + offset, group, first, pos, args.layer, kvh, kv,
                   scratch);
    }
  });
}

}  // namespace parley::backend::cpu

#include "backend/cpu/ops_attention.h"

#include <cmath>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace parley::backend::cpu {
namespace {

// One query head of one row: two passes (scores, then the weighted sum of V).
void attend_one(const float* q, uint32_t first, uint32_t last, int32_t layer, int32_t kv_head,
                const kv::KvView& kv, std::vector<float>& scores, std::vector<float>& row,
                float* out) {
  const int32_t head_dim = kv.shape().head_dim;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  scores.resize(last - first + 1);
  row.resize(size_t(head_dim));
  float max_score = -INFINITY;
  for (uint32_t t = first; t <= last; ++t) {
    kv.read_k(layer, t, kv_head, row.data());
    float dot = 0.0f;
    for (int32_t i = 0; i < head_dim; ++i) dot += q[i] * row[size_t(i)];
    const float s = dot * scale;
    scores[t - first] = s;
    max_score = std::fmax(max_score, s);
  }
  float sum = 0.0f;
  for (float& s : scores) {
    s = std::exp(s - max_score);
    sum += s;
  }
  for (int32_t i = 0; i < head_dim; ++i) out[i] = 0.0f;
  for (uint32_t t = first; t <= last; ++t) {
    kv.read_v(layer, t, kv_head, row.data());
    const float p = scores[t - first] / sum;
    for (int32_t i = 0; i < head_dim; ++i) out[i] += p * row[size_t(i)];
  }
}

}  // namespace

void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool) {
  const int32_t head_dim = kv.shape().head_dim;
  const int32_t group = args.n_heads / kv.shape().n_kv_heads;  // query heads per KV head
  const size_t q_row = size_t(args.n_heads) * size_t(head_dim);
  pool.parallel_for(args.n_rows * size_t(args.n_heads), [&](size_t begin, size_t end) {
    std::vector<float> scores, row;
    for (size_t task = begin; task < end; ++task) {
      const size_t r = task / size_t(args.n_heads);
      const int32_t h = int32_t(task % size_t(args.n_heads));
      const uint32_t pos = args.start_pos + uint32_t(r);
      const uint32_t window = uint32_t(args.sliding_window);
      const uint32_t first = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
      const size_t offset = r * q_row + size_t(h) * size_t(head_dim);
      attend_one(args.q + offset, first, pos, args.layer, h / group, kv, scores, row,
                 args.out + offset);
    }
  });
}

}  // namespace parley::backend::cpu

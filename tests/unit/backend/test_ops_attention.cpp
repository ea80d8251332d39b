// attention() against a naive double softmax over what the cache returns (so the check is
// the same for every KV type), for GQA head mapping, causal limits and sliding windows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "kv/kv_cache.h"
#include "backend/cpu/ops_attention.h"
#include "backend/cpu/thread_pool.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

struct Setup {
  int32_t n_heads, n_kv_heads, head_dim, window;
  uint32_t start_pos;
  size_t n_rows;
};

std::vector<double> naive_attention(const Setup& s, const std::vector<float>& q,
                                    const kv::KvCache& kv, int32_t layer) {
  const int32_t hd = s.head_dim;
  std::vector<double> out(s.n_rows * size_t(s.n_heads * hd), 0.0);
  std::vector<float> k(static_cast<size_t>(hd)), v(static_cast<size_t>(hd));
  for (size_t r = 0; r < s.n_rows; ++r) {
    const uint32_t pos = s.start_pos + uint32_t(r);
    const uint32_t first =
        s.window > 0 ? uint32_t(std::max<int64_t>(0, int64_t(pos) - s.window + 1)) : 0;
    for (int32_t h = 0; h < s.n_heads; ++h) {
      const int32_t kvh = h / (s.n_heads / s.n_kv_heads);
      const size_t qo = (r * size_t(s.n_heads) + size_t(h)) * size_t(hd);
      std::vector<double> p;
      for (uint32_t t = first; t <= pos; ++t) {
        kv.read_k(layer, t, kvh, k.data());
        double dot = 0.0;
        for (int32_t i = 0; i < hd; ++i) dot += double(q[qo + size_t(i)]) * k[size_t(i)];
        p.push_back(dot / std::sqrt(double(hd)));
      }
      const double m = *std::max_element(p.begin(), p.end());
      double sum = 0.0;
      for (double& x : p) sum += (x = std::exp(x - m));
      for (uint32_t t = first; t <= pos; ++t) {
        kv.read_v(layer, t, kvh, v.data());
        for (int32_t i = 0; i < hd; ++i) out[qo + size_t(i)] += p[t - first] / sum * v[size_t(i)];
      }
    }
  }
  return out;
}

void check_attention(const Setup& s, kv::KvType type) {
  std::mt19937 rng(uint32_t(s.head_dim * 31 + s.n_kv_heads + s.window));
  const int32_t layer = 1;
  const kv::KvShape shape{2, s.n_kv_heads, s.head_dim};
  kv::KvCache kv(type, shape, 320);
  fill_kv_randomly(kv, layer, s.start_pos + uint32_t(s.n_rows), rng);
  const auto q = random_values(s.n_rows * size_t(s.n_heads * s.head_dim), 3.0f, rng);
  std::vector<float> out(q.size(), NAN);
  backend::cpu::AttentionArgs args;
  args.q = q.data();
  args.out = out.data();
  args.n_rows = s.n_rows;
  args.start_pos = s.start_pos;
  args.layer = layer;
  args.n_heads = s.n_heads;
  args.sliding_window = s.window;
  backend::cpu::ThreadPool pool(3);
  backend::cpu::attention(args, kv, pool);

  const std::vector<double> want = naive_attention(s, q, kv, layer);
  double worst = 0.0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(want[i] - out[i]));
  INFO("heads " << s.n_heads << "/" << s.n_kv_heads << " hd " << s.head_dim << " window "
                << s.window << " start " << s.start_pos << " rows " << s.n_rows << " kv "
                << std::string(kv::kv_type_name(type)) << ": max |err| " << worst);
  // Values are O(1); float sums over the positions: 2e-6 for up to 40 of them, scaled with
  // the number of terms beyond.
  const double bound = 2e-6 * std::max(1.0, double(s.start_pos + s.n_rows) / 40.0);
  CHECK(worst < bound);

  // One row at a time over the same cache gives the same bits.
  std::vector<float> single(static_cast<size_t>(s.n_heads * s.head_dim));
  for (size_t r = 0; r < s.n_rows; ++r) {
    backend::cpu::AttentionArgs one = args;
    one.q = &q[r * single.size()];
    one.out = single.data();
    one.n_rows = 1;
    one.start_pos = s.start_pos + uint32_t(r);
    backend::cpu::attention(one, kv, pool);
    CHECK(std::equal(single.begin(), single.end(), out.begin() + int64_t(r * single.size())));
  }

  // Other thread counts split the KV heads into other jobs of neighbouring heads: same bits.
  for (int32_t threads : {1, 2, 5}) {
    backend::cpu::ThreadPool other_pool(threads);
    std::vector<float> again(q.size(), NAN);
    backend::cpu::AttentionArgs other = args;
    other.out = again.data();
    backend::cpu::attention(other, kv, other_pool);
    INFO(threads << " threads");
    CHECK(std::memcmp(again.data(), out.data(), out.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("attention matches a naive softmax for MHA, GQA, MQA, windows and every KV type") {
  for (kv::KvType type : {kv::KvType::f32, kv::KvType::f16, kv::KvType::int8}) {
    check_attention({4, 4, 8, 0, 0, 9}, type);     // MHA, prefill from 0
    check_attention({8, 4, 8, 0, 5, 7}, type);     // GQA, continuing at 5
    check_attention({4, 1, 64, 0, 20, 1}, type);   // MQA, one decode row
    check_attention({4, 2, 128, 0, 3, 12}, type);  // GQA, head size 128
    check_attention({8, 2, 8, 4, 0, 30}, type);    // sliding window 4
    check_attention({2, 2, 16, 1, 6, 5}, type);    // window 1: each row sees only itself
    check_attention({12, 2, 64, 0, 297, 3}, type); // 6 heads per KV head, 300 positions
    check_attention({6, 2, 32, 0, 40, 2}, type);   // 3 heads per KV head
    check_attention({4, 2, 64, 0, 0, 37}, type);   // jobs of 4 rows and a last one of 1
    check_attention({8, 1, 48, 0, 17, 23}, type);  // head size 48: the any-width kernel
    check_attention({4, 4, 64, 50, 30, 40}, type); // a window reached within the call: one row a job
    check_attention({4, 2, 16, 90, 10, 30}, type); // a window not reached: rows share jobs
    check_attention({12, 12, 64, 0, 100, 1}, type); // MHA decode: jobs of 1-4 KV heads
    check_attention({6, 3, 16, 0, 41, 9}, type);   // several KV heads and rows in a job
    check_attention({16, 8, 8, 0, 60, 2}, type);   // 8 KV heads of 2 query heads each
    check_attention({6, 6, 48, 0, 30, 2}, type);   // the any-width kernel over several KV heads
  }
}

}  // namespace parley::test

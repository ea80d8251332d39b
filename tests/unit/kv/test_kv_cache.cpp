// The KV cache stores what it is given: F32 exactly, F16 rounded to nearest even, INT8 with a
// symmetric per-token, per-head scale (max|x| / 127) and an error of at most half a step.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "kv/kv_cache.h"
#include "model/dtype.h"

using namespace parley;
using namespace parley::kv;

namespace {

const KvShape kShape{3, 2, 8};  // 3 layers, 2 KV heads, head_dim 8

std::vector<float> random_row(std::mt19937& rng, float scale) {
  std::normal_distribution<float> n(0.0f, scale);
  std::vector<float> v(size_t(kShape.row()));
  for (float& x : v) x = n(rng);
  return v;
}

}  // namespace

TEST_CASE("bytes per token: 2 x layers x kv_heads x head_dim x element, plus INT8 scales") {
  CHECK(kv_bytes_per_token(KvType::f32, kShape) == 2 * 3 * 2 * 8 * 4);
  CHECK(kv_bytes_per_token(KvType::f16, kShape) == 2 * 3 * 2 * 8 * 2);
  CHECK(kv_bytes_per_token(KvType::int8, kShape) == 2 * 3 * 2 * 8 + 2 * 3 * 2 * 4);
  KvCache cache(KvType::int8, kShape, 10);  // one 16-token block
  CHECK(cache.bytes() == 16 * kv_bytes_per_token(KvType::int8, kShape));
  KvCache two(KvType::f16, kShape, 17);  // two blocks
  CHECK(two.bytes() == 32 * kv_bytes_per_token(KvType::f16, kShape));
}

TEST_CASE("each type reads back what was written, within its rounding") {
  std::mt19937 rng(5);
  for (KvType type : {KvType::f32, KvType::f16, KvType::int8}) {
    CAPTURE(kv_type_name(type));
    KvCache cache(type, kShape, 4);
    std::vector<std::vector<float>> ks, vs;
    for (int layer = 0; layer < kShape.n_layers; ++layer) {
      for (uint32_t pos = 0; pos < 4; ++pos) {
        ks.push_back(random_row(rng, 1.0f + float(pos)));
        vs.push_back(random_row(rng, 0.5f));
        cache.write(layer, pos, ks.back().data(), vs.back().data());
      }
    }
    size_t i = 0;
    std::vector<float> got(size_t(kShape.head_dim));
    for (int layer = 0; layer < kShape.n_layers; ++layer) {
      for (uint32_t pos = 0; pos < 4; ++pos, ++i) {
        for (int h = 0; h < kShape.n_kv_heads; ++h) {
          for (int which = 0; which < 2; ++which) {
            const float* want = (which ? vs[i] : ks[i]).data() + h * kShape.head_dim;
            which ? cache.read_v(layer, pos, h, got.data()) : cache.read_k(layer, pos, h, got.data());
            float amax = 0;
            for (int d = 0; d < kShape.head_dim; ++d) amax = std::max(amax, std::fabs(want[d]));
            for (int d = 0; d < kShape.head_dim; ++d) {
              if (type == KvType::f32) {
                CHECK(got[d] == want[d]);
              } else if (type == KvType::f16) {
                CHECK(got[d] == model::f16_to_f32(model::f32_to_f16(want[d])));
              } else {
                const float step = amax / 127.0f;
                CHECK(std::fabs(got[d] - want[d]) <= 0.5f * step * (1 + 1e-5f));
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("INT8: the largest value of a head maps to +-127 exactly; zeros stay zero") {
  KvCache cache(KvType::int8, kShape, 1);
  std::vector<float> k(size_t(kShape.row()), 0.0f), v(size_t(kShape.row()), 0.0f);
  k[3] = -2.54f;  // head 0's largest magnitude
  k[1] = 1.27f;
  cache.write(0, 0, k.data(), v.data());
  std::vector<float> k0(8), k1(8);
  cache.read_k(0, 0, 0, k0.data());
  cache.read_k(0, 0, 1, k1.data());
  const float scale = 2.54f / 127.0f;
  CHECK(k0[3] == -127.0f * scale);
  CHECK(k0[1] == 64.0f * scale);  // 1.27 / scale = 63.5 rounds half to even: 64
  CHECK(k0[0] == 0.0f);
  for (float x : k1) CHECK(x == 0.0f);  // head 1 is all zero: scale 0
  std::vector<float> got(8);
  cache.read_v(0, 0, 1, got.data());
  for (float x : got) CHECK(x == 0.0f);
}

// The __host__ __device__ math of kernels/common, checked on the CPU against direct formulas.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/activation.cuh"
#include "kernels/common/attention_window.cuh"
#include "kernels/common/int8.cuh"
#include "kernels/common/rope.cuh"
#include "kernels/common/softmax_state.cuh"
#include "kernels/common/weight_blocks.cuh"
#include "model/dtype.h"

using namespace parley::kernels;

TEST_CASE("RoPE rotates pair (2j, 2j+1) by pos * theta^(-2j/d)") {
  const int d = 8;
  const float theta = 10000.0f;
  std::vector<float> x(d);
  for (int i = 0; i < d; ++i) x[i] = float(i + 1) * 0.25f;
  for (int pos : {0, 1, 7, 300}) {
    auto y = x;
    rope_rotate_head(y.data(), d, pos, theta);
    for (int j = 0; j < d / 2; ++j) {
      const double angle = pos * std::pow(double(theta), -2.0 * j / d);
      const double a = x[2 * j], b = x[2 * j + 1];
      CHECK(y[2 * j] == doctest::Approx(a * std::cos(angle) - b * std::sin(angle)).epsilon(1e-5));
      CHECK(y[2 * j + 1] == doctest::Approx(a * std::sin(angle) + b * std::cos(angle)).epsilon(1e-5));
    }
    // A rotation keeps each pair's length.
    for (int j = 0; j < d / 2; ++j) {
      CHECK(std::hypot(y[2 * j], y[2 * j + 1]) ==
            doctest::Approx(std::hypot(x[2 * j], x[2 * j + 1])).epsilon(1e-5));
    }
  }
}

TEST_CASE("online softmax: pushing keys one by one, or merging two halves, equals softmax") {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const int dim = 4, keys = 37;
  std::vector<float> s(keys), v(size_t(keys) * dim);
  for (float& x : s) x = n(rng);
  for (float& x : v) x = n(rng);

  // Direct softmax in double.
  double m = -INFINITY, denom = 0;
  for (float x : s) m = std::max(m, double(x));
  std::vector<double> want(dim, 0.0);
  for (int k = 0; k < keys; ++k) {
    const double w = std::exp(double(s[k]) - m);
    denom += w;
    for (int i = 0; i < dim; ++i) want[i] += w * v[size_t(k) * dim + i];
  }
  for (double& x : want) x /= denom;

  SoftmaxState<4> all, left, right;
  all.init(dim);
  left.init(dim);
  right.init(dim);
  for (int k = 0; k < keys; ++k) {
    all.push(s[k], &v[size_t(k) * dim], dim);
    (k < 15 ? left : right).push(s[k], &v[size_t(k) * dim], dim);
  }
  left.merge(right, dim);
  float out_all[4], out_merged[4];
  all.finish(out_all, dim);
  left.finish(out_merged, dim);
  for (int i = 0; i < dim; ++i) {
    CHECK(out_all[i] == doctest::Approx(want[i]).epsilon(1e-5));
    CHECK(out_merged[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }

  SoftmaxState<4> empty;
  empty.init(dim);
  all.merge(empty, dim);  // merging nothing changes nothing
  all.finish(out_all, dim);
  for (int i = 0; i < dim; ++i) CHECK(out_all[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("INT8 quantize: scale max|x|/127, round half to even, clamp") {
  const float x[4] = {0.5f, -1.27f, 0.0f, 0.635f};
  int8_t q[4];
  const float s = quantize_int8(x, 4, q);
  CHECK(s == doctest::Approx(0.01f));
  CHECK(q[1] == -127);
  CHECK(q[2] == 0);
  CHECK(q[0] == 50);
  CHECK(q[3] == 64);  // 63.5 -> 64 (even)
  for (int i = 0; i < 4; ++i) CHECK(std::fabs(dequantize_int8(q[i], s) - x[i]) <= 0.5f * s + 1e-6f);
  const float zeros[3] = {0, 0, 0};
  CHECK(quantize_int8(zeros, 3, q) == 0.0f);
  CHECK((q[0] == 0 && q[1] == 0 && q[2] == 0));
}

TEST_CASE("INT8: the split steps a warp uses round exactly as quantize_int8") {
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (int len : {1, 8, 64, 128, 257}) {
    std::vector<float> x(static_cast<size_t>(len));
    for (float& v : x) v = n(rng);
    if (len > 3) x[2] = -x[1];  // ties in |x| must not matter
    std::vector<int8_t> q(static_cast<size_t>(len));
    const float scale = quantize_int8(x.data(), len, q.data());
    // The warp's order: max over strided lanes, then a tree; max is exact in any order.
    float lane_max[32] = {};
    for (int i = 0; i < len; ++i) lane_max[i % 32] = std::fmax(lane_max[i % 32], std::fabs(x[size_t(i)]));
    for (int offset = 16; offset > 0; offset >>= 1) {
      for (int l = 0; l < 32; ++l) lane_max[l] = std::fmax(lane_max[l], lane_max[l ^ offset]);
    }
    CHECK(int8_scale(lane_max[0]) == scale);
    const float inv = int8_inverse_scale(scale);
    for (int i = 0; i < len; ++i) CHECK(quantize_int8_value(x[size_t(i)], inv) == q[size_t(i)]);
    // Round trip within half a step.
    for (int i = 0; i < len; ++i) {
      CHECK(std::fabs(dequantize_int8(q[size_t(i)], scale) - x[size_t(i)]) <= 0.5f * scale * 1.0001f);
    }
  }
  std::vector<float> zeros(16, 0.0f);
  std::vector<int8_t> q(16, 5);
  CHECK(quantize_int8(zeros.data(), 16, q.data()) == 0.0f);
  for (int8_t v : q) CHECK(v == 0);
}

TEST_CASE("softmax_rescale: an empty state contributes nothing, never NaN") {
  CHECK(softmax_rescale(-INFINITY, -INFINITY) == 0.0f);
  CHECK(softmax_rescale(-INFINITY, 3.0f) == 0.0f);
  CHECK(softmax_rescale(2.0f, 2.0f) == 1.0f);
  CHECK(softmax_rescale(1.0f, 3.0f) == doctest::Approx(std::exp(-2.0)).epsilon(1e-6));
}

TEST_CASE("swiglu_value is silu(g) * u, with the exponent capped at 88") {
  for (double g : {-100.0, -88.5, -10.0, -1.0, 0.0, 0.5, 3.0, 50.0}) {
    for (double u : {-2.0, 0.25, 1.0}) {
      const double want = g / (1.0 + std::exp(std::min(-g, 88.0))) * u;
      CHECK(double(swiglu_value(float(g), float(u))) == doctest::Approx(want).epsilon(1e-6));
      // Past the cap the value is within 1e-35 of the uncapped one: both are zero for all uses.
      if (g < -88.0) {
        CHECK(std::fabs(double(swiglu_value(float(g), float(u))) - g / (1.0 + std::exp(-g)) * u) < 1e-30);
      }
    }
  }
}

TEST_CASE("online softmax merge with an empty partial (a split with no keys) changes nothing") {
  SoftmaxState<3> a, empty;
  a.init(3);
  empty.init(3);
  const float v[3] = {1.0f, 2.0f, 3.0f};
  a.push(0.5f, v, 3);
  SoftmaxState<3> merged = a;
  merged.merge(empty, 3);
  CHECK(merged.m == a.m);
  CHECK(merged.d == a.d);
  for (int i = 0; i < 3; ++i) CHECK(merged.o[i] == a.o[i]);
}

TEST_CASE("window_first_key: the last `window` positions, the query's own included") {
  using parley::kernels::window_first_key;
  CHECK(window_first_key(0, 0) == 0);     // no window: everything from position 0
  CHECK(window_first_key(900, 0) == 0);
  CHECK(window_first_key(10, 4) == 7);    // 7, 8, 9, 10
  CHECK(window_first_key(3, 4) == 0);     // 0..3: the window is not full yet
  CHECK(window_first_key(4, 4) == 1);
  CHECK(window_first_key(5, 1) == 5);     // itself only
}

TEST_CASE("visible_keys: from the first row's window start to the last row") {
  using parley::kernels::visible_keys;
  const auto all = visible_keys(64, 127, 0);  // no window: everything up to the last row
  CHECK(all.first == 0);
  CHECK(all.last == 127);
  const auto windowed = visible_keys(64, 127, 8);  // row 64 sees 57..64
  CHECK(windowed.first == 57);
  CHECK(windowed.last == 127);
  const auto early = visible_keys(2, 5, 8);  // the window is not full yet
  CHECK(early.first == 0);
  CHECK(early.last == 5);
}

TEST_CASE("weight blocks: F16 bits, Q8_0, Q4_0, Q4_1 and Q5_1 values as their formulas give") {
  // Every F16 value against the model's converter (a separate implementation).
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float want = parley::model::f16_to_f32(uint16_t(h)), got = f16_bits_to_float(h);
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
    } else if (want != got) {
      CHECK(got == want);
    }
  }
  // Two blocks of each type with chosen scales, minimums and codes, at an odd address.
  const float d[2] = {0.5f, -0.125f}, m[2] = {-1.0f, 3.25f};
  std::vector<uint8_t> q8(1 + 2 * kQ8_0BlockBytes), q4(1 + 2 * kQ4_1BlockBytes);
  std::vector<uint8_t> q5(1 + 2 * kQ5_1BlockBytes), q40(1 + 2 * kQ4_0BlockBytes);
  const auto put_f16 = [](uint8_t* p, float v) {
    const uint16_t h = parley::model::f32_to_f16(v);
    p[0] = uint8_t(h & 0xff);
    p[1] = uint8_t(h >> 8);
  };
  const auto q8_code = [](int b, int j) { return (b * 37 + j * 11) % 255 - 127; };
  const auto q4_code = [](int b, int j) { return (b * 5 + j * 7) % 16; };
  const auto q5_code = [](int b, int j) { return (b * 13 + j * 11) % 32; };
  for (int b = 0; b < 2; ++b) {
    uint8_t* blk8 = q8.data() + 1 + b * kQ8_0BlockBytes;
    put_f16(blk8, d[b]);
    for (int j = 0; j < 32; ++j) blk8[2 + j] = uint8_t(int8_t(q8_code(b, j)));
    uint8_t* blk4 = q4.data() + 1 + b * kQ4_1BlockBytes;
    put_f16(blk4, d[b]);
    put_f16(blk4 + 2, m[b]);
    for (int j = 0; j < 16; ++j) blk4[4 + j] = uint8_t(q4_code(b, j) | q4_code(b, j + 16) << 4);
    // Q4_0: d, then the nibbles as Q4_1's, each code + 8.
    uint8_t* blk40 = q40.data() + 1 + b * kQ4_0BlockBytes;
    put_f16(blk40, d[b]);
    for (int j = 0; j < 16; ++j) blk40[2 + j] = blk4[4 + j];
    // Q5_1: d, m, a little-endian word whose bit j is value j's fifth bit, then as Q4_1.
    uint8_t* blk5 = q5.data() + 1 + b * kQ5_1BlockBytes;
    put_f16(blk5, d[b]);
    put_f16(blk5 + 2, m[b]);
    for (int j = 0; j < 32; ++j) blk5[4 + j / 8] |= uint8_t((q5_code(b, j) >> 4) << (j % 8));
    for (int j = 0; j < 16; ++j) {
      blk5[8 + j] = uint8_t((q5_code(b, j) & 15) | (q5_code(b, j + 16) & 15) << 4);
    }
  }
  for (int c = 0; c < 64; ++c) {
    const int b = c / 32, j = c % 32;
    CHECK(q8_0_value(q8.data() + 1, c) == d[b] * float(q8_code(b, j)));
    CHECK(q4_0_value(q40.data() + 1, c) == d[b] * float(q4_code(b, j) - 8));
    CHECK(q4_1_value(q4.data() + 1, c) == d[b] * float(q4_code(b, j)) + m[b]);
    CHECK(q5_1_value(q5.data() + 1, c) == d[b] * float(q5_code(b, j)) + m[b]);
  }
}

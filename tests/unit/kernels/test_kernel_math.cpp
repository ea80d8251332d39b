// The __host__ __device__ math of kernels/common, checked on the CPU against direct formulas.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/int8.cuh"
#include "kernels/common/rope.cuh"
#include "kernels/common/softmax_state.cuh"

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

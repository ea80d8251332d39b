// rmsnorm against its formula; rope_rows against kernels::rope_rotate_head (bit for bit) and
// against a direct double cos/sin rotation.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "backend/cpu/ops_norm_rope.h"
#include "kernels/common/rope.cuh"
#include "tiny_model.h"

namespace parley::test {

TEST_CASE("rmsnorm divides by the root mean square and scales by the weight") {
  std::mt19937 rng(1);
  for (size_t dim : {1u, 7u, 64u, 172u}) {
    const std::vector<float> x = random_values(dim, 3.0f, rng);
    const std::vector<float> w = random_values(dim, 2.0f, rng);
    std::vector<float> out(dim);
    backend::cpu::rmsnorm(x.data(), w.data(), dim, 1e-5f, out.data());
    double ms = 0.0;
    for (float v : x) ms += double(v) * v;
    ms /= double(dim);
    for (size_t i = 0; i < dim; ++i) {
      const double want = x[i] / std::sqrt(ms + 1e-5) * w[i];
      CHECK(out[i] == doctest::Approx(want).epsilon(1e-6));
    }
    backend::cpu::rmsnorm(x.data(), w.data(), dim, 1e-5f,
                          std::vector<float>(x).data());  // alias ok
  }
  std::vector<float> zeros(8, 0.0f), w(8, 1.0f), out(8, NAN);  // eps keeps zeros finite
  backend::cpu::rmsnorm(zeros.data(), w.data(), 8, 1e-5f, out.data());
  for (float v : out) CHECK(v == 0.0f);
}

TEST_CASE("rope_rows rotates pairs (2j, 2j+1) of every q and k head by pos * theta^(-2j/d)") {
  std::mt19937 rng(2);
  for (int head_dim : {2, 8, 64, 128}) {
    for (uint32_t pos : {0u, 1u, 17u, 300u}) {
      const int n_q = 4, n_k = 2;
      const float theta = head_dim == 128 ? 500000.0f : 10000.0f;
      std::vector<float> q = random_values(size_t(n_q * head_dim), 1.0f, rng);
      std::vector<float> k = random_values(size_t(n_k * head_dim), 1.0f, rng);
      const std::vector<float> q0 = q, k0 = k;
      backend::cpu::rope_rows(q.data(), n_q, k.data(), n_k, head_dim, pos, theta);

      std::vector<float> shared = q0;  // the header both backends share
      for (int h = 0; h < n_q; ++h)
        kernels::rope_rotate_head(&shared[size_t(h * head_dim)], head_dim, int(pos), theta);
      CHECK(shared == q);

      for (int h = 0; h < n_k; ++h) {
        for (int j = 0; j < head_dim / 2; ++j) {
          const double angle = pos * std::pow(double(theta), -2.0 * j / head_dim);
          const size_t a = size_t(h * head_dim + 2 * j);
          const double want_a = k0[a] * std::cos(angle) - k0[a + 1] * std::sin(angle);
          const double want_b = k0[a] * std::sin(angle) + k0[a + 1] * std::cos(angle);
          INFO("head_dim " << head_dim << " pos " << pos << " pair " << j);
          // The angle is a float product (as on the GPU): at pos 300 its rounding is ~1e-5.
          CHECK(std::fabs(k[a] - want_a) < 5e-5);
          CHECK(std::fabs(k[a + 1] - want_b) < 5e-5);
        }
      }
    }
  }
}

// Calls in a row that share some of position, head size and theta: each rotates by its own.
TEST_CASE("rope_rows rotates by each call's own position, head size and theta") {
  std::mt19937 rng(3);
  struct Call {
    int head_dim;
    uint32_t pos;
    float theta;
  };
  for (Call c : {Call{64, 17, 10000.0f}, Call{64, 17, 10000.0f}, Call{64, 17, 500000.0f},
                 Call{128, 17, 500000.0f}, Call{128, 18, 500000.0f}, Call{64, 18, 10000.0f},
                 Call{64, 17, 10000.0f}}) {
    std::vector<float> q = random_values(size_t(2 * c.head_dim), 1.0f, rng);
    std::vector<float> k = random_values(size_t(c.head_dim), 1.0f, rng);
    std::vector<float> want_q = q, want_k = k;
    backend::cpu::rope_rows(q.data(), 2, k.data(), 1, c.head_dim, c.pos, c.theta);
    for (int h = 0; h < 2; ++h) {
      kernels::rope_rotate_head(&want_q[size_t(h * c.head_dim)], c.head_dim, int(c.pos), c.theta);
    }
    kernels::rope_rotate_head(want_k.data(), c.head_dim, int(c.pos), c.theta);
    INFO("head_dim " << c.head_dim << " pos " << c.pos << " theta " << c.theta);
    CHECK(q == want_q);
    CHECK(k == want_k);
  }
}

}  // namespace parley::test

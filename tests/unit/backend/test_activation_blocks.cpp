// The 16-bit block rounding of activations for Q8_0 products: scale, range, error bound and
// the zero and non-finite cases.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend/cpu/activation_blocks.h"
#include "tiny_model.h"

namespace parley::test {

using backend::cpu::ActivationBlocks;

TEST_CASE("activation blocks: scale = amax / 32767, |x - scale q| <= scale / 2") {
  std::mt19937 rng(21);
  const size_t n = 3, cols = 96;
  std::vector<float> x = random_values(n * cols, 5.0f, rng);
  for (size_t k = 32; k < 64; ++k) x[k] *= 1e-30f;  // tiny values still use the full range
  ActivationBlocks b;
  backend::cpu::quantize_activations(x.data(), n, cols, b);
  REQUIRE(b.q.size() == n * cols);
  REQUIRE(b.scale.size() == n * cols / 32 + ActivationBlocks::kScalePadding);
  for (size_t blk = 0; blk < n * cols / 32; ++blk) {
    float amax = 0.0f;
    int peak = 0;
    for (size_t k = blk * 32; k < blk * 32 + 32; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    CHECK(b.scale[blk] == amax / 32767.0f);
    for (size_t k = blk * 32; k < blk * 32 + 32; ++k) {
      const double s = b.scale[blk];
      INFO("block " << blk << " value " << k);
      CHECK(std::abs(int(b.q[k])) <= 32767);
      CHECK(std::fabs(double(x[k]) - s * b.q[k]) <= s * (0.5 + 1e-6));
      peak = std::max(peak, std::abs(int(b.q[k])));
    }
    CHECK(peak == 32767);  // the largest value maps to the end of the range
    // The block's sum for weights with a minimum: its scale times its codes' exact sum.
    int64_t codes = 0;
    for (size_t k = blk * 32; k < blk * 32 + 32; ++k) codes += b.q[k];
    CHECK(b.sum[blk] == b.scale[blk] * float(codes));
  }
  // Row accessors point at each row's values, scales and sums.
  CHECK(b.q_row(2) == b.q.data() + 2 * cols);
  CHECK(b.scale_row(2) == b.scale.data() + 2 * cols / 32);
  CHECK(b.sum_row(2) == b.sum.data() + 2 * cols / 32);
}

TEST_CASE("activation blocks: zeros give scale 0, a NaN or infinity gives scale NaN") {
  std::vector<float> x(96, 0.0f);
  x[33] = std::numeric_limits<float>::quiet_NaN();
  x[70] = -std::numeric_limits<float>::infinity();
  x[71] = 1.0f;
  ActivationBlocks b;
  backend::cpu::quantize_activations(x.data(), 1, x.size(), b);
  CHECK(b.scale[0] == 0.0f);
  CHECK(std::isnan(b.scale[1]));
  CHECK(std::isnan(b.scale[2]));
  CHECK(b.sum[0] == 0.0f);
  CHECK(std::isnan(b.sum[1]));
  CHECK(std::isnan(b.sum[2]));
  for (int16_t q : b.q) CHECK(q == 0);
}

TEST_CASE("activation blocks: x * (32767 / amax) is rounded to nearest, ties to even") {
  std::mt19937 rng(8);
  std::vector<float> x = random_values(64, 3.0f, rng);
  x[0] = 32767.0f;  // block 0: factor exactly 1, so halves are ties
  x[1] = 0.5f;
  x[2] = 1.5f;
  x[3] = -2.5f;
  x[4] = 7.5f;
  ActivationBlocks b;
  backend::cpu::quantize_activations(x.data(), 1, x.size(), b);
  for (size_t blk = 0; blk < 2; ++blk) {
    float amax = 0.0f;
    for (size_t k = blk * 32; k < blk * 32 + 32; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    const float inv = 32767.0f / amax;
    for (size_t k = blk * 32; k < blk * 32 + 32; ++k) {
      INFO("value " << k);
      CHECK(b.q[k] == int16_t(std::nearbyint(x[k] * inv)));
    }
  }
  CHECK(b.q[1] == 0);
  CHECK(b.q[2] == 2);
  CHECK(b.q[3] == -2);
  CHECK(b.q[4] == 8);
}

}  // namespace parley::test

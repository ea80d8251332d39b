#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "backend/cpu/ops_swiglu.h"
#include "tiny_model.h"

namespace parley::test {

TEST_CASE("swiglu is silu(gate) * up") {
  std::mt19937 rng(3);
  const std::vector<float> gate = random_values(37, 8.0f, rng);
  const std::vector<float> up = random_values(37, 2.0f, rng);
  std::vector<float> out(37);
  backend::cpu::swiglu(gate.data(), up.data(), out.size(), out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    const double g = gate[i];
    CHECK(out[i] == doctest::Approx(g / (1.0 + std::exp(-g)) * up[i]).epsilon(1e-6));
  }
  std::vector<float> big = {-200.0f, 200.0f}, ones = {1.0f, 1.0f};  // exp overflow stays finite
  backend::cpu::swiglu(big.data(), ones.data(), 2, big.data());
  CHECK(big[0] == doctest::Approx(0.0));
  CHECK(big[1] == doctest::Approx(200.0));
}

}  // namespace parley::test

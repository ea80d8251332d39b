#include "backend/cpu/activation_blocks.h"

#include <cmath>
#include <limits>

namespace parley::backend::cpu {
namespace {

void quantize_block(const float* x, int16_t* q, float* scale) {
  float amax = 0.0f;
  bool finite = true;
  for (size_t k = 0; k < ActivationBlocks::kBlock; ++k) {
    finite = finite && std::isfinite(x[k]);
    amax = std::fmax(amax, std::fabs(x[k]));
  }
  if (!finite || amax == 0.0f) {
    *scale = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    for (size_t k = 0; k < ActivationBlocks::kBlock; ++k) q[k] = 0;
    return;
  }
  *scale = amax / ActivationBlocks::kMax;
  const float inv = ActivationBlocks::kMax / amax;
  // |x * inv| <= 32767 up to one rounding of the product, which cannot carry it past 32767.5.
  for (size_t k = 0; k < ActivationBlocks::kBlock; ++k) {
    q[k] = static_cast<int16_t>(std::nearbyint(x[k] * inv));
  }
}

}  // namespace

void quantize_activations(const float* x, size_t n, size_t cols, ActivationBlocks& out) {
  const size_t blocks = cols / ActivationBlocks::kBlock;
  out.n = n;
  out.cols = cols;
  out.q.resize(n * cols);
  out.scale.resize(n * blocks);
  for (size_t i = 0; i < n; ++i) {
    for (size_t b = 0; b < blocks; ++b) {
      const size_t k = i * cols + b * ActivationBlocks::kBlock;
      quantize_block(x + k, out.q.data() + k, out.scale.data() + i * blocks + b);
    }
  }
}

}  // namespace parley::backend::cpu

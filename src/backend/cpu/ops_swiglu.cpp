#include "backend/cpu/ops_swiglu.h"

#include <cmath>

namespace parley::backend::cpu {

void swiglu(const float* gate, const float* up, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace parley::backend::cpu

// The SwiGLU gate, shared by the CPU reference and the CUDA kernel.
#pragma once

#include <math.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// silu(g) * u with silu(g) = g / (1 + exp(-g)); the exponent is capped at 88 as the CPU
// backend caps it (exp(88) already makes silu of a large negative g a signed zero).
PARLEY_HD float swiglu_value(float g, float u) {
  return g / (1.0f + expf(fminf(-g, 88.0f))) * u;
}

}  // namespace parley::kernels

// INT8 KV quantization, shared by the CPU backend and the CUDA kernels: one symmetric scale
// per token and KV head, s = max|x| / 127, q = round(x / s).
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// Quantizes n values; returns the scale (0 for an all-zero row, whose q are all 0).
PARLEY_HD float quantize_int8(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = fmaxf(amax, fabsf(x[i]));
  const float scale = amax / 127.0f;
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < n; ++i) {
    const float r = rintf(x[i] * inv);  // round half to even, identical on host and device
    q[i] = static_cast<int8_t>(fminf(127.0f, fmaxf(-127.0f, r)));
  }
  return scale;
}

PARLEY_HD float dequantize_int8(int8_t q, float scale) { return static_cast<float>(q) * scale; }

}  // namespace parley::kernels

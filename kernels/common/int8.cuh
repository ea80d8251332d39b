// INT8 KV quantization, shared by the CPU backend and the CUDA kernels: one symmetric scale
// per token and KV head, s = max|x| / 127, q = round(x / s).
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// The multiplier q = round(x * inv) uses; 0 for an all-zero row. The steps are split out so a
// warp that reduces max|x| across lanes rounds exactly as the serial loop below does.
PARLEY_HD float int8_scale(float amax) { return amax / 127.0f; }
PARLEY_HD float int8_inverse_scale(float scale) { return scale > 0.0f ? 1.0f / scale : 0.0f; }
PARLEY_HD int8_t quantize_int8_value(float x, float inv) {
  const float r = rintf(x * inv);  // round half to even, identical on host and device
  return static_cast<int8_t>(fminf(127.0f, fmaxf(-127.0f, r)));
}

// Quantizes n values; returns the scale (0 for an all-zero row, whose q are all 0).
PARLEY_HD float quantize_int8(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = fmaxf(amax, fabsf(x[i]));
  const float scale = int8_scale(amax);
  const float inv = int8_inverse_scale(scale);
  for (int i = 0; i < n; ++i) q[i] = quantize_int8_value(x[i], inv);
  return scale;
}

PARLEY_HD float dequantize_int8(int8_t q, float scale) { return static_cast<float>(q) * scale; }

}  // namespace parley::kernels

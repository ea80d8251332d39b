// Rotary position embedding in the interleaved (Meta / GGUF) layout: pairs (2j, 2j+1) of each
// head rotate by pos * theta^(-2j / head_dim). Weights from rotate-half files are permuted at
// load so this one layout serves every format.
#pragma once

#include <math.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// Frequency of pair j, computed in double so host and device agree to the last bit of float.
PARLEY_HD float rope_inv_freq(int j, int head_dim, float theta) {
  return static_cast<float>(pow(static_cast<double>(theta), -2.0 * j / head_dim));
}

// Rotates one head of head_dim values (head_dim even) in place for position pos.
PARLEY_HD void rope_rotate_head(float* x, int head_dim, int pos, float theta) {
  for (int j = 0; j < head_dim / 2; ++j) {
    const float angle = static_cast<float>(pos) * rope_inv_freq(j, head_dim, theta);
    const float c = cosf(angle);
    const float s = sinf(angle);
    const float a = x[2 * j];
    const float b = x[2 * j + 1];
    x[2 * j] = a * c - b * s;
    x[2 * j + 1] = a * s + b * c;
  }
}

}  // namespace parley::kernels

// The SwiGLU gate of the feed-forward block.
#pragma once

#include <cstddef>

namespace parley::backend::cpu {

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), with a SIMD exp (within 1 ulp
// of exp) on the best target of the running CPU. out may alias gate or up.
void swiglu(const float* gate, const float* up, size_t n, float* out);

}  // namespace parley::backend::cpu

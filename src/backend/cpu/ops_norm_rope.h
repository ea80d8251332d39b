// RMSNorm and rotary position embedding of whole rows.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parley::backend::cpu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < dim. out may alias x.
void rmsnorm(const float* x, const float* weight, size_t dim, float eps, float* out);

// Rotates every head of q ([n_q_heads * head_dim]) and k ([n_k_heads * head_dim]) for
// position pos, exactly as kernels::rope_rotate_head does (bit for bit), computing each
// pair's angle once for all heads, and keeping the calling thread's last table for a next
// call at the same position (the other layers of a decode step).
void rope_rows(float* q, int32_t n_q_heads, float* k, int32_t n_k_heads, int32_t head_dim,
               uint32_t pos, float theta);

}  // namespace parley::backend::cpu

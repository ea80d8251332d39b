// The SIMD kernel behind the block types' weight products (Q8_0, Q4_0, Q4_1, Q5_1): integer dot
// products of each weight block with the matching block of quantized activations, over the packed
// rows of cpu_matrix.h, on the best target of the running CPU (Highway dynamic dispatch).
#pragma once

#include <cstddef>

#include "backend/cpu/activation_blocks.h"
#include "backend/cpu/cpu_matrix.h"

namespace parley::backend::cpu {

// y[i * y_stride + r] = sum over blocks b of (weight scale) x (activation scale) x (exact integer
// dot product of the block's values), for r in [r0, r1) and every activation row i of x; w is a
// packed block matrix (CpuMatrix) with x.cols columns; a Q4_0 matrix (codes in nibbles) gives the
// bits a Q8_0 one with the same codes and scales gives. For Q4_1 and Q5_1, + the minimums' part:
// the sum over blocks of (minimum) x (the activation block's scale x sum of codes), added last.
//
// Summation order, the same for every batch size: per row pair, each block's integer sum
// (split into lanes) is converted to float, times the activation scale, then the weight
// scale, and added lane-wise in block order; the lanes are added at the end. So a y element
// depends only on its own two rows (never on x.n, r0/r1 or the thread count), and prefill
// gives the bits that decoding the same tokens one at a time gives.
void matmul_rows_q8(const CpuMatrix& w, const ActivationBlocks& x, float* y, size_t y_stride,
                    size_t r0, size_t r1);

}  // namespace parley::backend::cpu

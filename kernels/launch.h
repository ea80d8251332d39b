// The only header host code includes to reach the kernels: one <Op>Args struct of pointers
// and sizes, and one launch_<op>() per kernel, each on a caller-given stream.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace parley::kernels {

struct RmsNormArgs {
  const float* x;       // [rows, dim]
  const float* weight;  // [dim]
  float* out;           // [rows, dim]; may equal x
  int32_t rows;
  int32_t dim;
  float eps;
};
cudaError_t launch_rmsnorm(const RmsNormArgs& args, cudaStream_t stream);

}  // namespace parley::kernels

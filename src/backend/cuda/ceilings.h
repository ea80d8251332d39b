// The device's own ceilings, for benchmarks to compare against: copy bandwidth and the bf16
// matrix rate of cuBLAS.
#pragma once

#include "backend/cuda/module_api.h"

namespace parley::backend::cuda {

// Throws Error(backend) on CUDA failure, Error(out_of_memory) when the buffers do not fit.
parley_cuda_measurements measure_ceilings(int32_t device, uint64_t copy_bytes, int32_t gemm_size);

}  // namespace parley::backend::cuda

// CUDA and cuBLAS failures -> parley::Error(backend) naming the call. The module catches every
// Error at its C boundary, so none leaves libparley_cuda.so.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "common/error.h"

namespace parley::backend::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const Status s = e == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::backend;
  fail(s, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline void check_cublas(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return;
  const Status s = e == CUBLAS_STATUS_ALLOC_FAILED ? Status::out_of_memory : Status::backend;
  fail(s, std::string(what) + ": " + cublasGetStatusName(e) + " (" + cublasGetStatusString(e) + ")");
}

}  // namespace parley::backend::cuda

#define PARLEY_CUDA(call) ::parley::backend::cuda::check_cuda((call), #call)
#define PARLEY_CUBLAS(call) ::parley::backend::cuda::check_cublas((call), #call)

// Dense products with F32 accumulation: y[n, w.rows] = x[n, w.cols] w^T, weights and x in
// the resident type, y in F32. Through cuBLAS, except single rows of F16 or BF16 weights,
// which take the streaming gemv kernel (cuBLAS reaches less of the memory bandwidth there).
// A fixed workspace keeps cuBLAS from allocating while a CUDA graph is being captured.
#pragma once

#include <cublas_v2.h>

#include "backend/cuda/device_memory.h"
#include "backend/cuda/resident_weights.h"
#include "kernels/launch.h"

namespace parley::backend::cuda {

class Gemm {
 public:
  explicit Gemm(cudaStream_t stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // type: PARLEY_CUDA_F32, _F16 or _BF16 (of w and x).
  void linear(const DeviceMatrix& w, int32_t type, const void* x, int n, float* y) const;

  // A single-row product in one of the gemv kernel's fused forms (min_warps set here);
  // Error(internal) for arguments it cannot serve (check kernels::gemv_supports first).
  void gemv(kernels::GemvArgs args) const;

  // Raw column-major GemmEx for measurements: C[m, n] = A[m, k] B[k, n], all of `type`
  // except C (F32).
  void raw(int m, int n, int k, const void* a, const void* b, float* c, int32_t type) const;

 private:
  cudaStream_t stream_;
  int32_t gemv_min_warps_ = 1;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
};

}  // namespace parley::backend::cuda

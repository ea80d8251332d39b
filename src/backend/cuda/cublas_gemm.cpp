#include "backend/cuda/cublas_gemm.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "kernels/launch.h"

namespace parley::backend::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

cudaDataType_t data_type(int32_t type) {
  switch (type) {
    case PARLEY_CUDA_F16: return CUDA_R_16F;
    case PARLEY_CUDA_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

}  // namespace

Gemm::Gemm(cudaStream_t stream) : stream_(stream), workspace_(kWorkspaceBytes) {
  int device = 0, sms = 0;
  PARLEY_CUDA(cudaGetDevice(&device));
  PARLEY_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  gemv_min_warps_ = 16 * std::max(1, sms);  // two resident blocks of 8 warps per multiprocessor
  PARLEY_CUBLAS(cublasCreate(&handle_));
  PARLEY_CUBLAS(cublasSetStream(handle_, stream));
  PARLEY_CUBLAS(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
  // F32 products stay full F32 (no TF32): reference checks compare them with the CPU.
  PARLEY_CUBLAS(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
}

Gemm::~Gemm() {
  if (handle_) cublasDestroy(handle_);
}

void Gemm::linear(const DeviceMatrix& w, int32_t type, const void* x, int n, float* y) const {
  // Row-major y[n, rows] is column-major y^T[rows, n] = W[rows, cols] x^T[cols, n], where
  // the row-major W reads as column-major W^T (hence OP_T) and x as x^T.
  if (n == 1 && kernels::gemv_supports(type, w.cols, w.data, x)) {
    const kernels::GemvArgs a{w.data, x, y, type, w.rows, w.cols, gemv_min_warps_};
    check_cuda(kernels::launch_gemv(a, stream_), "launch_gemv");
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t t = data_type(type);
  PARLEY_CUBLAS(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, int(w.rows), n, int(w.cols), &alpha,
                             w.data, t, int(w.cols), x, t, int(w.cols), &beta, y, CUDA_R_32F,
                             int(w.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void Gemm::gemv(kernels::GemvArgs args) const {
  args.min_warps = gemv_min_warps_;
  require(kernels::gemv_supports(args), Status::internal, "single-row product arguments the gemv cannot serve");
  check_cuda(kernels::launch_gemv(args, stream_), "launch_gemv");
}

void Gemm::raw(int m, int n, int k, const void* a, const void* b, float* c, int32_t type) const {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t t = data_type(type);
  PARLEY_CUBLAS(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, t, m, b, t, k,
                             &beta, c, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace parley::backend::cuda

#include "backend/cuda/ceilings.h"

#include <cstdio>
#include <random>
#include <vector>

#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_memory.h"
#include "kernels/launch.h"

namespace parley::backend::cuda {
namespace {

constexpr int kWarmups = 3;
constexpr int kRuns = 10;

// Milliseconds per run of `work` on `stream`, after warm-ups.
template <class F>
double time_runs(cudaStream_t stream, F work) {
  for (int i = 0; i < kWarmups; ++i) work();
  cudaEvent_t a, b;
  PARLEY_CUDA(cudaEventCreate(&a));
  PARLEY_CUDA(cudaEventCreate(&b));
  PARLEY_CUDA(cudaEventRecord(a, stream));
  for (int i = 0; i < kRuns; ++i) work();
  PARLEY_CUDA(cudaEventRecord(b, stream));
  PARLEY_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  PARLEY_CUDA(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(ms) / kRuns;
}

// Random bf16 values (zeros run faster than real data): a random F32 piece converted on the
// device, then doubled by copies until the buffer is full.
void fill_random_bf16(void* dst, size_t n, cudaStream_t stream) {
  const size_t piece = std::min<size_t>(n, size_t(1) << 22);
  std::vector<float> host(piece);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : host) v = u(rng);
  DeviceBuffer f32(piece * 4);
  PARLEY_CUDA(cudaMemcpy(f32.get(), host.data(), piece * 4, cudaMemcpyHostToDevice));
  kernels::ConvertArgs c{f32.get(), kernels::kF32, dst, kernels::kBF16, 1, int64_t(piece)};
  PARLEY_CUDA(kernels::launch_convert(c, stream));
  for (size_t done = piece; done < n;) {
    const size_t len = std::min(done, n - done);
    PARLEY_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + done * 2, dst, len * 2,
                                cudaMemcpyDeviceToDevice, stream));
    done += len;
  }
  PARLEY_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace

parley_cuda_measurements measure_ceilings(int32_t device, uint64_t copy_bytes, int32_t gemm_size) {
  PARLEY_CUDA(cudaSetDevice(device));
  parley_cuda_measurements out{};
  cudaDeviceProp prop{};
  PARLEY_CUDA(cudaGetDeviceProperties(&prop, device));
  std::snprintf(out.device_name, sizeof out.device_name, "%.127s", prop.name);
  Stream stream;
  {
    DeviceBuffer src(copy_bytes), dst(copy_bytes);
    PARLEY_CUDA(cudaMemsetAsync(src.get(), 1, copy_bytes, stream.get()));
    const double ms = time_runs(stream.get(), [&] {
      PARLEY_CUDA(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice,
                                  stream.get()));
    });
    out.copy_gb_s = 2.0 * double(copy_bytes) / (ms * 1e-3) / 1e9;  // read + written, as STREAM
  }
  if (gemm_size > 0) {
    const size_t n = size_t(gemm_size);
    DeviceBuffer a(n * n * 2), b(n * n * 2), c(n * n * 4);
    fill_random_bf16(a.get(), n * n, stream.get());
    fill_random_bf16(b.get(), n * n, stream.get());
    Gemm gemm(stream.get());
    const double ms = time_runs(stream.get(), [&] {
      gemm.raw(gemm_size, gemm_size, gemm_size, a.get(), b.get(), c.as<float>(), PARLEY_CUDA_BF16);
    });
    out.bf16_tflops = 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12;
    out.gemm_size = gemm_size;
  }
  return out;
}

}  // namespace parley::backend::cuda

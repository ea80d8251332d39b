#include "gpu_test_util.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <random>

namespace parley::test {

bool gpu_available() {
  static const bool available = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      cudaGetLastError();
      std::printf("SKIPPED: no CUDA device (%s); the GPU tests did not run\n",
                  e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
      return false;
    }
    return true;
  }();
  if (!available) MESSAGE("skipped: no CUDA device");
  return available;
}

void check_cuda_ok(cudaError_t e) { REQUIRE_MESSAGE(e == cudaSuccess, cudaGetErrorName(e)); }

GuardedBuffer::GuardedBuffer(size_t bytes) : bytes_(bytes) {
  check_cuda_ok(cudaMalloc(reinterpret_cast<void**>(&base_), bytes + 2 * kGuard));
  check_cuda_ok(cudaMemset(base_, kPattern, bytes + 2 * kGuard));
}

GuardedBuffer::~GuardedBuffer() { cudaFree(base_); }

void GuardedBuffer::upload(const void* src, size_t n) const {
  REQUIRE(n <= bytes_);
  check_cuda_ok(cudaMemcpy(base_ + kGuard, src, n, cudaMemcpyHostToDevice));
}

void GuardedBuffer::download(void* dst, size_t n) const {
  REQUIRE(n <= bytes_);
  check_cuda_ok(cudaDeviceSynchronize());
  check_cuda_ok(cudaMemcpy(dst, base_ + kGuard, n, cudaMemcpyDeviceToHost));
}

bool GuardedBuffer::guards_intact() const {
  std::vector<unsigned char> head(kGuard), tail(kGuard);
  check_cuda_ok(cudaDeviceSynchronize());
  check_cuda_ok(cudaMemcpy(head.data(), base_, kGuard, cudaMemcpyDeviceToHost));
  check_cuda_ok(cudaMemcpy(tail.data(), base_ + kGuard + bytes_, kGuard, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kGuard; ++i) {
    if (head[i] != kPattern || tail[i] != kPattern) return false;
  }
  return true;
}

double nmse(const float* a, const float* b, size_t n) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    err += d * d;
    ref += double(b[i]) * double(b[i]);
  }
  if (ref == 0) return err == 0 ? 0 : 1e30;
  return err / ref;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace parley::test

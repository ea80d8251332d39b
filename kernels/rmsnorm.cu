// RMSNorm, optionally after adding the residual branch into x: one block per row.
#include "kernels/common/elem.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kBlock = 256;

__global__ void rmsnorm_kernel(RmsNormArgs a) {
  __shared__ float scratch[32];
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  const size_t base = size_t(blockIdx.x) * size_t(a.dim);
  float* x = a.x + base;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < a.dim; i += kBlock) {
    float v = x[i];
    if (a.residual) {
      v += a.residual[base + i];
      x[i] = v;  // each element is read and written by this thread alone
    }
    sum += v * v;
  }
  const float inv = rsqrtf(block_sum<kBlock>(sum, scratch) / float(a.dim) + a.eps);
  for (int i = threadIdx.x; i < a.dim; i += kBlock) {
    store_elem(a.out, a.out_type, base + i, x[i] * inv * a.weight[i]);
  }
}

// The same for rows of up to kBlock * 4 * kMaxVecs floats in 16-byte pieces: every load of a
// thread is issued before the first is used (the loop above waits for each in turn).
constexpr int kMaxVecs = 8;

__global__ void rmsnorm_vec_kernel(RmsNormArgs a) {
  __shared__ float scratch[32];
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  const size_t base = size_t(blockIdx.x) * size_t(a.dim);
  auto* x = reinterpret_cast<float4*>(a.x + base);
  const auto* res = reinterpret_cast<const float4*>(a.residual + (a.residual ? base : 0));
  const auto* weight = reinterpret_cast<const float4*>(a.weight);
  const int n4 = a.dim / 4;
  float4 v[kMaxVecs], r[kMaxVecs];
#pragma unroll
  for (int k = 0; k < kMaxVecs; ++k) {
    const int i = threadIdx.x + k * kBlock;
    v[k] = i < n4 ? x[i] : float4{0, 0, 0, 0};
    r[k] = i < n4 && a.residual ? res[i] : float4{0, 0, 0, 0};
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxVecs; ++k) {
    const int i = threadIdx.x + k * kBlock;
    if (a.residual) {
      v[k] = float4{v[k].x + r[k].x, v[k].y + r[k].y, v[k].z + r[k].z, v[k].w + r[k].w};
      if (i < n4) x[i] = v[k];
    }
    sum += sum_of_squares(v[k]);
  }
  const float inv = rsqrtf(block_sum<kBlock>(sum, scratch) / float(a.dim) + a.eps);
#pragma unroll
  for (int k = 0; k < kMaxVecs; ++k) {
    const int i = threadIdx.x + k * kBlock;
    if (i >= n4) break;
    const float4 w = weight[i];
    const size_t o = base + size_t(i) * 4;
    store_elem(a.out, a.out_type, o, v[k].x * inv * w.x);
    store_elem(a.out, a.out_type, o + 1, v[k].y * inv * w.y);
    store_elem(a.out, a.out_type, o + 2, v[k].z * inv * w.z);
    store_elem(a.out, a.out_type, o + 3, v[k].w * inv * w.w);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t launch_rmsnorm(const RmsNormArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.dim <= 0) return cudaErrorInvalidValue;
  const bool vec = args.dim % 4 == 0 && args.dim <= 4 * kBlock * kMaxVecs && aligned16(args.x) &&
                   aligned16(args.residual) && aligned16(args.weight);
  return launch_dependent(vec ? rmsnorm_vec_kernel : rmsnorm_kernel, dim3(unsigned(args.rows)), dim3(kBlock),
                          0, stream, args);
}

}  // namespace parley::kernels

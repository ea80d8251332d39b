// Single-row products for the decode step, y = W x with F16 or BF16 W and x and F32 sums:
// pure streaming of W, so each warp keeps 16 loads of 16 bytes per lane in flight along its
// row and reduces the row across lanes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kBlocksPerSm = 2;  // GemvArgs::min_warps is sized for this many resident blocks
constexpr int kLoadsInFlight = 16;
constexpr int kVec = 8;             // values per 16-byte load

template <int TYPE>
__device__ __forceinline__ float2 to_float2(uint32_t w) {
  if constexpr (TYPE == kF16) {
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
  } else {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
  }
}

template <int TYPE>
__device__ __forceinline__ float dot8(const float2 (&x)[4], uint4 w, float acc) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = to_float2<TYPE>(words[k]);
    acc = fmaf(f.x, x[k].x, acc);
    acc = fmaf(f.y, x[k].y, acc);
  }
  return acc;
}

// Each warp takes rows warp, warp + total_warps, ... (a grid sized to the device, so no
// partial last wave), each row in column steps of 16 loads of 16 bytes per lane.
template <int TYPE>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) gemv_kernel(GemvArgs a) {
  const int lane = threadIdx.x % 32;
  const int64_t total_warps = int64_t(gridDim.x) * kWarps;
  const auto* w = static_cast<const uint4*>(a.w);
  const auto* x = static_cast<const uint4*>(a.x);
  const int64_t row_vecs = a.cols / kVec;
  const int64_t first_row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  // The weights need nothing from the kernel before: their first bytes head for L2 while
  // it finishes (with dependent launch), or at once.
  if (first_row < a.rows) {
#pragma unroll
    for (int s = 0; s < kLoadsInFlight; ++s) {
      const int64_t v = lane + int64_t(s) * 32;
      if (v < row_vecs) asm volatile("prefetch.global.L2 [%0];" ::"l"(w + first_row * row_vecs + v));
    }
  }
  wait_for_producers();
  for (int64_t row = first_row; row < a.rows; row += total_warps) {
    const uint4* wrow = w + row * row_vecs;
    float acc = 0.0f;
    for (int64_t v0 = lane; v0 < row_vecs; v0 += int64_t(kLoadsInFlight) * 32) {
      uint4 wv[kLoadsInFlight];
#pragma unroll
      for (int s = 0; s < kLoadsInFlight; ++s) {
        const int64_t v = v0 + int64_t(s) * 32;
        // W is streamed once: kept out of L1 so x stays there.
        wv[s] = v < row_vecs ? __ldcs(wrow + v) : uint4{0, 0, 0, 0};
      }
#pragma unroll
      for (int s = 0; s < kLoadsInFlight; ++s) {
        const int64_t v = v0 + int64_t(s) * 32;
        const uint4 xv = v < row_vecs ? __ldg(x + v) : uint4{0, 0, 0, 0};
        const float2 xf[4] = {to_float2<TYPE>(xv.x), to_float2<TYPE>(xv.y), to_float2<TYPE>(xv.z),
                              to_float2<TYPE>(xv.w)};
        acc = dot8<TYPE>(xf, wv[s], acc);
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) a.y[row] = acc;
  }
}

template <int TYPE>
cudaError_t launch_typed(const GemvArgs& a, cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>((a.rows + kWarps - 1) / kWarps, (a.min_warps + kWarps - 1) / kWarps);
  return launch_dependent(gemv_kernel<TYPE>, dim3(unsigned(blocks)), dim3(kWarps * 32), 0, stream, a);
}

}  // namespace

bool gemv_supports(int32_t type, int64_t cols, const void* w, const void* x) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return (type == kF16 || type == kBF16) && cols > 0 && cols % kVec == 0 && aligned(w) && aligned(x);
}

cudaError_t launch_gemv(const GemvArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || !gemv_supports(args.type, args.cols, args.w, args.x) || args.min_warps <= 0) {
    return cudaErrorInvalidValue;
  }
  return args.type == kF16 ? launch_typed<kF16>(args, stream) : launch_typed<kBF16>(args, stream);
}

}  // namespace parley::kernels

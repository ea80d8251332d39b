// Single-row products for the decode step, y = W x with F16 or BF16 W and F32 sums: pure
// streaming of W, so each warp keeps 16 loads of 16 bytes per lane in flight along its rows
// and reduces each row across lanes. Fused forms save the decode step whole kernels: the
// RMSNorm before the product (each block normalizes x into shared memory), the residual add
// after it, and SwiGLU (a warp takes a gate row and its up row together).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/common/activation.cuh"
#include "kernels/common/elem.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
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
__device__ __forceinline__ uint32_t from_float2(float a, float b) {
  uint32_t bits;
  if constexpr (TYPE == kF16) {
    const __half2 h = __floats2half2_rn(a, b);
    bits = *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    bits = *reinterpret_cast<const uint32_t*>(&h);
  }
  return bits;
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

// x / rms(x) * norm_weight into xs in TYPE, four values per thread and step. Thread i sums
// elements 4i.., 4(i + kThreads).., as rmsnorm_vec_kernel does, so the sum, and with it
// every normalized value, is the one that kernel writes.
template <int TYPE>
__device__ void rms_normalize_into(const GemvArgs& a, uint2* xs) {
  __shared__ float scratch[32];
  const auto* x4 = static_cast<const float4*>(a.x);
  const auto* w4 = reinterpret_cast<const float4*>(a.norm_weight);
  const int n4 = int(a.cols / 4);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    sum += sum_of_squares(x4[i]);
  }
  const float inv = rsqrtf(block_sum<kThreads>(sum, scratch) / float(a.cols) + a.eps);
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    const float4 v = x4[i], g = w4[i];
    xs[i] = uint2{from_float2<TYPE>(v.x * inv * g.x, v.y * inv * g.y),
                  from_float2<TYPE>(v.z * inv * g.z, v.w * inv * g.w)};
  }
  __syncthreads();
}

// Each warp takes units warp, warp + total_warps, ... (a grid sized to the device, so no
// partial last wave), each in column steps of 16 loads of 16 bytes per lane. A unit is one
// row, or for SwiGLU a gate row and its up row.
template <int TYPE, int INPUT, int OUTPUT>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) gemv_kernel(GemvArgs a) {
  constexpr int kRows = OUTPUT == kGemvSwiglu ? 2 : 1;
  constexpr int kLoads = kLoadsInFlight / kRows;  // per row
  extern __shared__ uint4 x_normed[];
  const int lane = threadIdx.x % 32;
  const int64_t total_warps = int64_t(gridDim.x) * kWarps;
  const auto* w = static_cast<const uint4*>(a.w);
  const int64_t row_vecs = a.cols / kVec;
  const int64_t units = a.rows / kRows;  // row r of a unit u is u + r * units
  const int64_t first_unit = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  // The weights need nothing from the kernel before: their first bytes head for L2 while
  // it finishes (with dependent launch), or at once.
  if (first_unit < units) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int s = 0; s < kLoads; ++s) {
        const int64_t v = lane + int64_t(s) * 32;
        if (v < row_vecs) {
          asm volatile("prefetch.global.L2 [%0];" ::"l"(w + (first_unit + r * units) * row_vecs + v));
        }
      }
    }
  }
  wait_for_producers();
  if constexpr (INPUT == kGemvRmsNormed) rms_normalize_into<TYPE>(a, reinterpret_cast<uint2*>(x_normed));
  const auto* x = static_cast<const uint4*>(a.x);

  for (int64_t unit = first_unit; unit < units; unit += total_warps) {
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    for (int64_t v0 = lane; v0 < row_vecs; v0 += int64_t(kLoads) * 32) {
      uint4 wv[kRows][kLoads];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const uint4* wrow = w + (unit + r * units) * row_vecs;
#pragma unroll
        for (int s = 0; s < kLoads; ++s) {
          const int64_t v = v0 + int64_t(s) * 32;
          // W is streamed once: kept out of L1 so x stays there.
          wv[r][s] = v < row_vecs ? __ldcs(wrow + v) : uint4{0, 0, 0, 0};
        }
      }
#pragma unroll
      for (int s = 0; s < kLoads; ++s) {
        const int64_t v = v0 + int64_t(s) * 32;
        uint4 xv{0, 0, 0, 0};
        if (v < row_vecs) {
          if constexpr (INPUT == kGemvRmsNormed) {
            xv = x_normed[v];
          } else {
            xv = __ldg(x + v);
          }
        }
        const float2 xf[4] = {to_float2<TYPE>(xv.x), to_float2<TYPE>(xv.y), to_float2<TYPE>(xv.z),
                              to_float2<TYPE>(xv.w)};
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r] = dot8<TYPE>(xf, wv[r][s], acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
    }
    if (lane == 0) {
      if constexpr (OUTPUT == kGemvStore) {
        static_cast<float*>(a.y)[unit] = acc[0];
      } else if constexpr (OUTPUT == kGemvAdd) {
        float* y = static_cast<float*>(a.y);
        y[unit] = y[unit] + acc[0];
      } else {
        store_elem(a.y, TYPE, size_t(unit), swiglu_value(acc[0], acc[1]));
      }
    }
  }
}

template <int TYPE, int INPUT, int OUTPUT>
cudaError_t launch_form(const GemvArgs& a, cudaStream_t stream) {
  const int64_t units = OUTPUT == kGemvSwiglu ? a.rows / 2 : a.rows;
  const int64_t blocks = std::min<int64_t>((units + kWarps - 1) / kWarps, (a.min_warps + kWarps - 1) / kWarps);
  const size_t smem = INPUT == kGemvRmsNormed ? size_t(a.cols) * 2 : 0;
  return launch_dependent(gemv_kernel<TYPE, INPUT, OUTPUT>, dim3(unsigned(blocks)), dim3(kThreads), smem,
                          stream, a);
}

template <int TYPE, int INPUT>
cudaError_t launch_input(const GemvArgs& a, cudaStream_t stream) {
  switch (a.output) {
    case kGemvStore: return launch_form<TYPE, INPUT, kGemvStore>(a, stream);
    case kGemvAdd: return launch_form<TYPE, INPUT, kGemvAdd>(a, stream);
    default: return launch_form<TYPE, INPUT, kGemvSwiglu>(a, stream);
  }
}

template <int TYPE>
cudaError_t launch_typed(const GemvArgs& a, cudaStream_t stream) {
  return a.input == kGemvRmsNormed ? launch_input<TYPE, kGemvRmsNormed>(a, stream)
                                   : launch_input<TYPE, kGemvPlain>(a, stream);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool gemv_supports(int32_t type, int64_t cols, const void* w, const void* x) {
  return (type == kF16 || type == kBF16) && cols > 0 && cols % kVec == 0 && aligned16(w) && aligned16(x);
}

bool gemv_supports(const GemvArgs& a) {
  if (!gemv_supports(a.type, a.cols, a.w, a.x) || a.rows <= 0 || a.min_warps <= 0) return false;
  if (a.input != kGemvPlain &&
      (a.input != kGemvRmsNormed || a.cols > kGemvMaxNormedCols || a.norm_weight == nullptr ||
       !aligned16(a.norm_weight))) {
    return false;
  }
  if (a.output == kGemvSwiglu) return a.rows % 2 == 0;
  return a.output == kGemvStore || a.output == kGemvAdd;
}

cudaError_t launch_gemv(const GemvArgs& args, cudaStream_t stream) {
  if (!gemv_supports(args)) return cudaErrorInvalidValue;
  return args.type == kF16 ? launch_typed<kF16>(args, stream) : launch_typed<kBF16>(args, stream);
}

}  // namespace parley::kernels

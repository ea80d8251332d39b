// RoPE on q and k, then K/V into the paged cache (INT8 with one scale per token and KV head,
// F16 or F32) and into the staging rows the host copies back. One warp per head of a token.
#include "kernels/common/elem.cuh"
#include "kernels/common/int8.cuh"
#include "kernels/common/reduce.cuh"
#include "kernels/common/rope.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxPairsPerLane = 4;  // head_dim <= 256

__device__ void store_kv_elem(uint8_t* dst, int32_t kv_type, int i, float v, float inv) {
  switch (kv_type) {
    case kKvInt8: reinterpret_cast<int8_t*>(dst)[i] = quantize_int8_value(v, inv); break;
    case kKvF16: reinterpret_cast<__half*>(dst)[i] = __float2half_rn(v); break;
    default: reinterpret_cast<float*>(dst)[i] = v; break;
  }
}

__global__ void __launch_bounds__(kWarps * 32) rope_kv_append_kernel(RopeKvAppendArgs a) {
  allow_dependents();  // small: the next kernel may start launching now
  wait_for_producers();
  const PagedKv& kv = a.kv;
  const int lane = threadIdx.x % 32;
  const int item = blockIdx.y * kWarps + threadIdx.x / 32;  // q heads, then k heads, then v heads
  const int n_items = a.n_heads + 2 * kv.n_kv_heads;
  if (item >= n_items) return;  // whole warps only; no block-wide barrier below
  const int t = blockIdx.x;
  const int pos = a.step->start_pos + t;
  const int hd = kv.head_dim, half = hd / 2;
  float* head = a.qkv + size_t(t) * size_t(n_items) * hd + size_t(item) * hd;
  const bool rotate = item < a.n_heads + kv.n_kv_heads;

  float x0[kMaxPairsPerLane], x1[kMaxPairsPerLane];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kMaxPairsPerLane; ++i) {
    const int j = lane + 32 * i;
    x0[i] = x1[i] = 0.0f;
    if (j >= half) continue;
    float e0 = head[2 * j], e1 = head[2 * j + 1];
    if (rotate) {
      // The CPU's expressions, kept from fusing into FMAs so both round alike.
      const float angle = static_cast<float>(pos) * rope_inv_freq(j, hd, a.theta);
      const float c = cosf(angle), s = sinf(angle);
      const float r0 = __fsub_rn(__fmul_rn(e0, c), __fmul_rn(e1, s));
      const float r1 = __fadd_rn(__fmul_rn(e0, s), __fmul_rn(e1, c));
      e0 = r0;
      e1 = r1;
      head[2 * j] = e0;
      head[2 * j + 1] = e1;
    }
    x0[i] = e0;
    x1[i] = e1;
    amax = fmaxf(amax, fmaxf(fabsf(e0), fabsf(e1)));
  }
  if (item < a.n_heads) return;

  const bool is_v = item >= a.n_heads + kv.n_kv_heads;
  const int kvh = (item - a.n_heads) % kv.n_kv_heads;
  float scale = 1.0f, inv = 1.0f;
  if (kv.kv_type == kKvInt8) {
    scale = int8_scale(warp_max(amax));  // max is exact in any order: the CPU's scale
    inv = int8_inverse_scale(scale);
  }
  const int slot = pos % kKvBlockTokens;
  uint8_t* block = kv.blocks[pos / kKvBlockTokens];
  uint8_t* dst = block + (is_v ? kv.v_offset(a.layer, slot, kvh) : kv.k_offset(a.layer, slot, kvh));
  const size_t staged_row = is_v ? a.staging.v_row(kv, a.layer, t) : a.staging.k_row(kv, a.layer, t);
  uint8_t* staged = a.staging.base ? a.staging.base + staged_row + size_t(kvh) * hd * kv.elem_bytes() : nullptr;
#pragma unroll
  for (int i = 0; i < kMaxPairsPerLane; ++i) {
    const int j = lane + 32 * i;
    if (j >= half) continue;
    store_kv_elem(dst, kv.kv_type, 2 * j, x0[i], inv);
    store_kv_elem(dst, kv.kv_type, 2 * j + 1, x1[i], inv);
    if (a.staging.base) {
      store_kv_elem(staged, kv.kv_type, 2 * j, x0[i], inv);
      store_kv_elem(staged, kv.kv_type, 2 * j + 1, x1[i], inv);
    }
  }
  if (kv.kv_type == kKvInt8 && lane == 0) {
    const size_t s_off = is_v ? kv.v_scale_offset(a.layer, slot, kvh) : kv.k_scale_offset(a.layer, slot, kvh);
    *reinterpret_cast<float*>(block + s_off) = scale;
    const size_t st_off = is_v ? a.staging.v_scales(kv, a.layer, t) : a.staging.k_scales(kv, a.layer, t);
    if (a.staging.base) reinterpret_cast<float*>(a.staging.base + st_off)[kvh] = scale;
  }
}

}  // namespace

cudaError_t launch_rope_kv_append(const RopeKvAppendArgs& args, cudaStream_t stream) {
  const PagedKv& kv = args.kv;
  if (args.n_tokens <= 0 || kv.n_kv_heads <= 0 || kv.head_dim <= 0 || kv.head_dim % 2 != 0 ||
      kv.head_dim > 2 * 32 * kMaxPairsPerLane || args.staging.n_tokens != args.n_tokens) {
    return cudaErrorInvalidValue;
  }
  const int items = args.n_heads + 2 * kv.n_kv_heads;
  const dim3 grid(unsigned(args.n_tokens), unsigned((items + kWarps - 1) / kWarps));
  return launch_dependent(rope_kv_append_kernel, grid, dim3(kWarps * 32), 0, stream, args);
}

}  // namespace parley::kernels

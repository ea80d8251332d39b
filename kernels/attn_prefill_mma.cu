// Causal GQA prefill attention on the tensor cores (FlashAttention-2): a block holds 64 query
// rows of one head, 16 per warp, with Q as F16 fragments in registers. It walks the visible
// keys in tiles of 64 (32 for head_dim 256): the threads dequantize the tile's K and V rows
// into shared memory as F16, then each warp forms its scores S = Q K^T and the update
// O += P V with mma.sync m16n8k16 (F32 accumulators; V's fragments through ldmatrix.trans),
// keeping an online softmax per row in registers. Serves INT8 and F16 caches; F32 caches
// take the exact kernel. Variants (AttnPrefillArgs::variant) run 8 warps (128 rows) per block,
// and/or load the next tile's bytes into registers while the warps compute on the current
// one; the arithmetic is the same in every variant.
#include <cuda_fp16.h>

#include "kernels/attn_prefill_mma.h"
#include "kernels/common/attention_window.cuh"
#include "kernels/common/elem.cuh"
#include "kernels/common/kv_vec.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/head_dim_dispatch.cuh"

namespace parley::kernels {
namespace {

constexpr int kRowsPerWarp = 16;
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kVecLen = 8;  // elements per load while filling a tile

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);  // lo in the low 16 bits: the smaller index
  return *reinterpret_cast<const uint32_t*>(&h);
}

// d += a b: a 16x16 F16 (row), b 16x8 F16 (col), d 16x8 F32.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The two B fragments (keys 0-7 and 8-15 of a 16-key step, dims n8..n8+7) of a [key][dim]
// tile: lanes 0-15 name the 16 rows.
__device__ __forceinline__ void ldmatrix_x2_trans(const __half* row, uint32_t& b0, uint32_t& b1) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1)
               : "r"(addr));
}

template <int N>
__device__ __forceinline__ void store_halves(__half* dst, const float (&x)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int c = 0; c < N / 8; ++c) {
      const uint4 u{pack_half2(x[8 * c], x[8 * c + 1]), pack_half2(x[8 * c + 2], x[8 * c + 3]),
                    pack_half2(x[8 * c + 4], x[8 * c + 5]), pack_half2(x[8 * c + 6], x[8 * c + 7])};
      reinterpret_cast<uint4*>(dst)[c] = u;
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e] = __float2half_rn(x[e]);
  }
}

// One thread's share of a K/V tile as stored (kVecLen elements of K and of V per piece, and
// for INT8 their rows' scales), between the loads from the cache and the F16 stores into
// shared memory.
template <int HD, int T, int kThreads, int kKeys>
struct TileBytes {
  static constexpr int kVecsPerRow = HD / kVecLen;
  static constexpr int kPieces = (kKeys * kVecsPerRow + kThreads - 1) / kThreads;
  static constexpr int kWords = kVecLen * kKvElemBytes<T> / 4;
  uint32_t k[kPieces][kWords], v[kPieces][kWords];
  float k_scale[kPieces], v_scale[kPieces];

  // Piece p of this thread: key row j of the tile, columns c * kVecLen...
  __device__ static bool piece(int p, int& j, int& c) {
    const int i = int(threadIdx.x) + p * kThreads;
    j = i / kVecsPerRow;
    c = i % kVecsPerRow;
    return i < kKeys * kVecsPerRow;
  }

  // Keys at or past kv_len are stale slots: zeros instead.
  __device__ void load(const PagedKv& kv, int layer, int kvh, int tile, int kv_len) {
#pragma unroll
    for (int p = 0; p < kPieces; ++p) {
      int j, c;
      const bool mine = piece(p, j, c);
      const int key = tile + j;
#pragma unroll
      for (int w = 0; w < kWords; ++w) k[p][w] = v[p][w] = 0u;
      k_scale[p] = v_scale[p] = 0.0f;
      if (!mine || key >= kv_len) continue;
      const uint8_t* block = kv.blocks[key / kKvBlockTokens];
      const int slot = key % kKvBlockTokens;
      const uint8_t* kp = block + kv.k_offset(layer, slot, kvh) + c * kVecLen * kKvElemBytes<T>;
      const uint8_t* vp = block + kv.v_offset(layer, slot, kvh) + c * kVecLen * kKvElemBytes<T>;
      if constexpr (kWords == 4) {
        const uint4 ku = __ldg(reinterpret_cast<const uint4*>(kp));
        const uint4 vu = __ldg(reinterpret_cast<const uint4*>(vp));
        k[p][0] = ku.x, k[p][1] = ku.y, k[p][2] = ku.z, k[p][3] = ku.w;
        v[p][0] = vu.x, v[p][1] = vu.y, v[p][2] = vu.z, v[p][3] = vu.w;
      } else {
        static_assert(kWords == 2, "8 INT8 or F16 elements per piece");
        const uint2 ku = __ldg(reinterpret_cast<const uint2*>(kp));
        const uint2 vu = __ldg(reinterpret_cast<const uint2*>(vp));
        k[p][0] = ku.x, k[p][1] = ku.y;
        v[p][0] = vu.x, v[p][1] = vu.y;
      }
      if constexpr (T == kKvInt8) {
        k_scale[p] = *reinterpret_cast<const float*>(block + kv.k_scale_offset(layer, slot, kvh));
        v_scale[p] = *reinterpret_cast<const float*>(block + kv.v_scale_offset(layer, slot, kvh));
      }
    }
  }

  // The loaded pieces as F16 rows of k_s and v_s (INT8 values times their row's scale).
  template <int kStride>
  __device__ void store(__half (*k_s)[kStride], __half (*v_s)[kStride]) const {
    constexpr int kPerWord = 4 / kKvElemBytes<T>;
#pragma unroll
    for (int p = 0; p < kPieces; ++p) {
      int j, c;
      if (!piece(p, j, c)) continue;
      float kx[kVecLen], vx[kVecLen];
#pragma unroll
      for (int w = 0; w < kWords; ++w) {
        unpack_kv_word<T>(k[p][w], kx + w * kPerWord);
        unpack_kv_word<T>(v[p][w], vx + w * kPerWord);
      }
      if constexpr (T == kKvInt8) {
#pragma unroll
        for (int e = 0; e < kVecLen; ++e) {
          kx[e] *= k_scale[p];
          vx[e] *= v_scale[p];
        }
      }
      store_halves(&k_s[j][c * kVecLen], kx);
      store_halves(&v_s[j][c * kVecLen], vx);
    }
  }
};

template <int HD, int T, int kWarps, bool kPipelined>
__global__ void __launch_bounds__(32 * kWarps) attn_prefill_mma_kernel(AttnPrefillArgs a) {
  constexpr int kThreads = 32 * kWarps;
  constexpr int kRows = kWarps * kRowsPerWarp;
  constexpr int kDims = HD < 16 ? 16 : HD;      // the mma's k is 16: head_dim 8 is zero-padded
  constexpr int kKeys = HD >= 256 ? 32 : 64;    // keys per tile (shared memory under 48 KiB)
  constexpr int kStride = kDims + 8;            // halves: rows 16 bytes apart in banks
  constexpr int kDimTiles = HD / 8;             // n-tiles of 8 dims in O
  static_assert(HD % kVecLen == 0, "head sizes are multiples of 8");
  __shared__ __align__(16) __half k_s[kKeys][kStride];  // [key][dim]
  __shared__ __align__(16) __half v_s[kKeys][kStride];
  wait_for_producers();

  const PagedKv& kv = a.kv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int grp = lane / 4, tig = lane % 4;  // the mma fragments' row group and column pair
  const int h = blockIdx.y;
  const int kvh = h / (a.n_heads / kv.n_kv_heads);
  const int start = a.step->start_pos;
  const int kv_len = start + a.n_tokens;  // the cache already holds every row's own K/V
  const int win = a.sliding_window;

  if constexpr (HD < 16) {  // padding dims of K stay zero (Q's are zero too)
    for (int i = threadIdx.x; i < kKeys * (kDims - HD); i += kThreads)
      k_s[i / (kDims - HD)][HD + i % (kDims - HD)] = __float2half(0.0f);
  }

  // This thread's two rows (fragment rows grp and grp + 8 of the warp's 16).
  int pos[2], first[2];
  bool active[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int t = blockIdx.x * kRows + warp * kRowsPerWarp + grp + 8 * r;
    active[r] = t < a.n_tokens;
    pos[r] = start + t;
    first[r] = window_first_key(pos[r], win);
  }

  // Q fragments, scaled so the softmax can use exp2.
  const float q_scale = kLog2e / sqrtf(float(HD));
  uint32_t qf[kDims / 16][4];
#pragma unroll
  for (int kk = 0; kk < kDims / 16; ++kk) {
    float v[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int t = blockIdx.x * kRows + warp * kRowsPerWarp + grp + 8 * r;
      const float* row = a.q + size_t(t) * a.q_stride + size_t(h) * HD;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int dim = kk * 16 + (c / 2) * 8 + tig * 2 + c % 2;
        v[r][c] = active[r] && dim < HD ? row[dim] * q_scale : 0.0f;
      }
    }
    qf[kk][0] = pack_half2(v[0][0], v[0][1]);
    qf[kk][1] = pack_half2(v[1][0], v[1][1]);
    qf[kk][2] = pack_half2(v[0][2], v[0][3]);
    qf[kk][3] = pack_half2(v[1][2], v[1][3]);
  }

  float o[kDimTiles][4];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  // Keys the block's rows see, and this warp's.
  const int row0 = blockIdx.x * kRows, warp_row0 = row0 + warp * kRowsPerWarp;
  const KeySpan keys = visible_keys(start + row0, start + min(a.n_tokens, row0 + kRows) - 1, win);
  const KeySpan warp_keys =
      visible_keys(start + warp_row0, start + min(a.n_tokens, warp_row0 + kRowsPerWarp) - 1, win);

  // Tiles sit at multiples of kKeys whatever the block's rows: every layout then takes each
  // row's keys in the same groups, so its online softmax rounds the same way.
  const int first_tile = keys.first / kKeys * kKeys;
  TileBytes<HD, T, kThreads, kKeys> bytes;
  if (kPipelined && first_tile <= keys.last) bytes.load(kv, a.layer, kvh, first_tile, kv_len);
  for (int tile = first_tile; tile <= keys.last; tile += kKeys) {
    if (!kPipelined) bytes.load(kv, a.layer, kvh, tile, kv_len);
    __syncthreads();  // the previous tile is no longer read
    bytes.template store<kStride>(k_s, v_s);
    __syncthreads();
    // The next tile's loads are in flight while the warps work on this one.
    if (kPipelined && tile + kKeys <= keys.last) bytes.load(kv, a.layer, kvh, tile + kKeys, kv_len);
    // Warps whose rows see none of this tile skip it (the barriers above stay shared).
    if (tile > warp_keys.last || tile + kKeys <= warp_keys.first) continue;

    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kDims / 16; ++kk) {
        const __half* krow = &k_s[n * 8 + grp][kk * 16 + tig * 2];
        mma_16816(s[n], qf[kk], *reinterpret_cast<const uint32_t*>(krow),
                  *reinterpret_cast<const uint32_t*>(krow + 8));
      }
    }
    // Mask, then the online softmax per row (a row's values live in the 4 lanes of a group).
    float m_tile[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = c / 2;
        const int key = tile + n * 8 + tig * 2 + c % 2;
        const bool visible = active[r] && key <= pos[r] && key >= first[r];
        s[n][c] = visible ? s[n][c] : -INFINITY;
        m_tile[r] = fmaxf(m_tile[r], s[n][c]);
      }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m_tile[r] = fmaxf(m_tile[r], __shfl_xor_sync(0xffffffffu, m_tile[r], 1));
      m_tile[r] = fmaxf(m_tile[r], __shfl_xor_sync(0xffffffffu, m_tile[r], 2));
      const float m_new = fmaxf(m[r], m_tile[r]);
      alpha[r] = m[r] == -INFINITY ? 0.0f : exp2f(m[r] - m_new);
      m[r] = m_new;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = c / 2;
        const float p = s[n][c] == -INFINITY ? 0.0f : exp2f(s[n][c] - m[r]);
        s[n][c] = p;
        l[r] += p;
      }
    }
#pragma unroll
    for (int n = 0; n < kDimTiles; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }
    // O += P V, P's accumulator layout reused as the A fragments of 16 keys at a time.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint32_t pf[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                              pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int n = 0; n < kDimTiles; ++n) {
        uint32_t b0, b1;
        ldmatrix_x2_trans(&v_s[kk * 16 + lane % 16][n * 8], b0, b1);
        mma_16816(o[n], pf, b0, b1);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (!active[r]) continue;
    const int t = blockIdx.x * kRows + warp * kRowsPerWarp + grp + 8 * r;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    const size_t out_row = size_t(t) * size_t(a.n_heads) * HD + size_t(h) * HD;
#pragma unroll
    for (int n = 0; n < kDimTiles; ++n) {
      store_elem(a.out, a.out_type, out_row + n * 8 + tig * 2, o[n][2 * r] * inv);
      store_elem(a.out, a.out_type, out_row + n * 8 + tig * 2 + 1, o[n][2 * r + 1] * inv);
    }
  }
}

template <int HD, int kWarps, bool kPipelined>
cudaError_t launch_layout(const AttnPrefillArgs& a, cudaStream_t stream) {
  constexpr int kRows = kWarps * kRowsPerWarp;
  const dim3 grid(unsigned((a.n_tokens + kRows - 1) / kRows), unsigned(a.n_heads)), block(32 * kWarps);
  return a.kv.kv_type == kKvInt8
             ? launch_dependent(attn_prefill_mma_kernel<HD, kKvInt8, kWarps, kPipelined>, grid, block, 0, stream, a)
             : launch_dependent(attn_prefill_mma_kernel<HD, kKvF16, kWarps, kPipelined>, grid, block, 0, stream, a);
}

template <int HD>
cudaError_t launch_hd(const AttnPrefillArgs& a, cudaStream_t stream) {
  switch (a.variant) {
    case kPrefillFourWarps: return launch_layout<HD, 4, false>(a, stream);
    case kPrefillEightWarps: return launch_layout<HD, 8, false>(a, stream);
    case kPrefillFourWarpsPipelined: return launch_layout<HD, 4, true>(a, stream);
    case kPrefillEightWarpsPipelined: return launch_layout<HD, 8, true>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_attn_prefill_mma(const AttnPrefillArgs& args, cudaStream_t stream) {
  if (args.kv.kv_type != kKvInt8 && args.kv.kv_type != kKvF16) return cudaErrorInvalidValue;
  return with_head_dim(args.kv.head_dim, [&](auto hd) { return launch_hd<hd()>(args, stream); });
}

}  // namespace parley::kernels

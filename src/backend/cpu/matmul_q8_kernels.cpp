// Compiled once per SIMD target (foreach_target.h re-includes this file); HWY_DYNAMIC_DISPATCH
// picks the best target of the running CPU.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/matmul_q8_kernels.cpp"
#include "backend/cpu/matmul_q8_kernels.h"
#include "backend/cpu/prefetch_hints.h"

#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_matrix.h"
#include "model/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace parley::backend::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kBlock = model::kQ8BlockValues;
static_assert(kBlock == ActivationBlocks::kBlock);

// 16-bit lanes, at most one block per vector (a whole block on AVX-512). Pairs of 16-bit
// products are summed into 32-bit lanes (vpmaddwd on x86); |w| <= 128 and |x| <= 32767 keep
// every lane sum far from overflow.
using D16 = hn::CappedTag<int16_t, kBlock>;
using D8 = hn::Rebind<int8_t, D16>;
using D32 = hn::RepartitionToWide<D16>;
using DF = hn::Rebind<float, D32>;
using VF = hn::Vec<DF>;

// Register tile: weight rows (the matrix copy's tile, kTileRows: cpu_matrix.h) x activation
// rows. Wider tiles only where 32 vector registers hold their accumulators.
constexpr size_t kTileCols = HWY_TARGET <= HWY_AVX3 ? 4 : 2;

// Weight hints run at least this far ahead of the loads. One tile of short rows (4 x 832
// bytes for 768 values) is too near to hide the memory latency at full bandwidth: on a
// 2-core AVX-512 machine the 32000 x 768 logits matrix streams 12-20 % faster with hints
// 8-16 KiB ahead than one tile ahead.
constexpr size_t kPrefetchMinBytes = 8192;

// Activation rows per cache block: their 16-bit values (32 x 11 KiB for the widest matrices
// of a 1B model) stay in L2 while every weight row of the range passes over them.
constexpr size_t kActivationBlock = 32;

// Blocks whose scales are converted and multiplied together, ahead of their dot products:
// then each block's integer sum takes one multiply-add (weight scale x activation scale, in
// one float), where it took a multiply and a multiply-add. A 256 x 768 matrix in L2 on one
// Zen 4 core: 32 -> 36 GB/s; stepping through the tile line by line from one pointer: 39.
constexpr size_t kScaleGroup = 16;

struct Problem {
  const CpuMatrix& w;
  const ActivationBlocks& x;
  float* y;
  size_t y_stride;
  size_t blocks;       // per row
  size_t ahead_bytes;  // how far ahead the weight hints run: whole tiles (prefetch_hints.h)
  size_t scales_line;  // offset in a packed row of the line where its scales start
  size_t value_bytes, minimums_offset, fifth_bits_offset;  // the copy's layout (cpu_matrix.h)
  // Each weight byte is read once (one block of activation rows, as in decode): hints that
  // keep it out of the caches' longer-lived levels. Prefill re-reads the rows for every
  // activation block, so there they stay.
  bool read_once;

  HWY_INLINE void prefetch(const void* at) const {
    if (read_once) {
      prefetch_stream(at);
    } else {
      hwy::Prefetch(at);
    }
  }
  // The same line twice as far ahead, into L2 (prefetch_hints.h); a stream read once only.
  HWY_INLINE void prefetch_far(const std::byte* near) const {
    if (read_once) prefetch_to_l2(near + ahead_bytes);
  }
};

// The exact integer dot product of one weight block with one activation block, as float
// lanes. A lane sums 2 (AVX-512) or 4 (AVX2) products of magnitude <= 2^22, so its
// conversion is exact; narrower targets sum more per lane and may round it once.
HWY_INLINE VF block_dot(const int8_t* wq, const int16_t* xq) {
  const D16 d16;
  const D8 d8;
  const D32 d32;
  const DF df;
  auto sum0 = hn::Zero(d32), sum1 = hn::Zero(d32);
  HWY_UNROLL(32)
  for (size_t j = 0; j < kBlock; j += hn::Lanes(d16)) {
    const auto w16 = hn::PromoteTo(d16, hn::LoadU(d8, wq + j));
    sum0 = hn::ReorderWidenMulAccumulate(d32, w16, hn::LoadU(d16, xq + j), sum0, sum1);
  }
  return hn::ConvertTo(df, hn::RearrangeToOddPlusEven(sum0, sum1));
}

// How a matrix copy holds its codes (cpu_matrix.h): Q8_0 in bytes, Q4_0 in nibbles (code +
// 8), Q4_1 in nibbles (codes 0-15, and a minimum per block), Q5_1 in nibbles and fifth bits
// (codes 0-31, and a minimum per block).
enum class Codes { bytes, nibbles, nibbles_with_minimums, five_bits_with_minimums };

// Two blocks held in 4 bits (cpu_matrix.h): 32 bytes, value k of the even block in the low
// nibble of byte k and of the odd block in the high one. Widened to 16-bit lanes as loaded
// (x86 has no 8-bit shifts), a mask gives the even block's codes and a shift by 4 the odd
// one's, less kBias (8 for Q4_0's signed codes): the lanes block_dot promotes bytes to. Each
// is unpacked once and multiplied with every activation row of the tile (in prefill,
// unpacking per row and activation row cost 40 % of the speed). codes_dot sums as block_dot
// does, so a matrix in nibbles gives the bits the same codes in bytes give.
constexpr size_t kParts = kBlock / hn::MaxLanes(D16());
using V16 = hn::Vec<D16>;

template <int8_t kBias>
HWY_INLINE void unpack_pair(const uint8_t* wq, V16 (&even)[kParts], V16 (&odd)[kParts]) {
  const D16 d16;
  const hn::Rebind<uint8_t, D16> du8;
  const auto bias = hn::Set(d16, int16_t(kBias));
  const auto low_bits = hn::Set(d16, int16_t(0x0f));
  HWY_UNROLL(32)
  for (size_t part = 0; part < kParts; ++part) {
    const auto bytes = hn::PromoteTo(d16, hn::LoadU(du8, wq + part * hn::Lanes(d16)));
    even[part] = hn::Sub(hn::And(bytes, low_bits), bias);
    odd[part] = hn::Sub(hn::ShiftRight<4>(bytes), bias);
  }
}

// Q5_1's fifth bits: 16 added to the lanes of part `part` of a block's codes whose bit is
// set in the block's 32-bit word at `bits` (bit k for value k). One lane per part only on the
// scalar target.
static_assert(hn::MaxLanes(D16()) >= 8 || hn::MaxLanes(D16()) == 1);
HWY_INLINE V16 with_fifth_bits(V16 codes, const uint8_t* bits, size_t part) {
  const D16 d16;
  if constexpr (hn::MaxLanes(D16()) >= 8) {
    const auto set = hn::LoadMaskBits(d16, bits + part * hn::MaxLanes(d16) / 8);
    return hn::IfThenElse(set, hn::Add(codes, hn::Set(d16, int16_t(16))), codes);
  } else {
    const int bit = (bits[part / 8] >> (part % 8)) & 1;
    return hn::Add(codes, hn::Set(d16, int16_t(bit << 4)));
  }
}

HWY_INLINE VF codes_dot(const V16 (&w16)[kParts], const int16_t* xq) {
  const D16 d16;
  const D32 d32;
  const DF df;
  auto sum0 = hn::Zero(d32), sum1 = hn::Zero(d32);
  HWY_UNROLL(32)
  for (size_t part = 0; part < kParts; ++part) {
    sum0 = hn::ReorderWidenMulAccumulate(d32, w16[part], hn::LoadU(d16, xq + part * hn::Lanes(d16)),
                                         sum0, sum1);
  }
  return hn::ConvertTo(df, hn::RearrangeToOddPlusEven(sum0, sum1));
}

// Rows [first, first + R) of one tile of the copy (cpu_matrix.h): where a row's block values
// and scales lie. A block (32 bytes, or 16 in 4 bits), and a vector of up to 16 scales from a
// multiple of 16, never crosses a 64-byte chunk.
struct TileRows {
  const std::byte* tile;
  size_t first;
  size_t value_bytes;        // where a packed row's scales start
  size_t minimums_offset;    // where a packed Q4_1 or Q5_1 row's minimums start
  size_t fifth_bits_offset;  // where a packed Q5_1 row's fifth bits start
  HWY_INLINE const std::byte* at(size_t r, size_t byte) const {
    return tile + CpuMatrix::in_tile_offset(first + r, byte);
  }
  HWY_INLINE const hwy::float16_t* scales(size_t r, size_t b) const {
    return reinterpret_cast<const hwy::float16_t*>(at(r, value_bytes + b * sizeof(uint16_t)));
  }
  HWY_INLINE const hwy::float16_t* minimums(size_t r, size_t b) const {
    return reinterpret_cast<const hwy::float16_t*>(
        at(r, minimums_offset + b * sizeof(uint16_t)));
  }
  HWY_INLINE const uint8_t* fifth_bits(size_t r, size_t b) const {
    return reinterpret_cast<const uint8_t*>(at(r, fifth_bits_offset + 4 * b));
  }
};

// The minimums' part of a Q4_1 or Q5_1 row's product with one activation row: the sum over
// blocks of (minimum) x (activation scale x sum of the block's codes), lane-wise in block
// order, then across lanes. Vectors of up to 16 minimums from a multiple of 16 stay inside a
// line, as the scales do; activation sums past the row's last block (padding, or the next
// row's) are masked off.
HWY_INLINE float minimum_term(const TileRows& w, size_t r, const float* x_sums, size_t blocks) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  auto sum = hn::Zero(df);
  for (size_t b = 0; b < blocks; b += hn::Lanes(df)) {
    const auto x = hn::IfThenElseZero(hn::FirstN(df, blocks - b), hn::LoadU(df, x_sums + b));
    sum = hn::MulAdd(hn::PromoteTo(df, hn::LoadU(dh, w.minimums(r, b))), x, sum);
  }
  return hn::GetLane(hn::SumOfLanes(df, sum));
}

// The scales of blocks [b0, b0 + count), weight row by activation row: each weight scale
// times the activation block's, so that a block's integer sum is scaled by one multiply. A
// whole vector at a time: a packed row's scales are followed by padding to a multiple of 32
// bytes (cpu_matrix.h), and the activation scales by ActivationBlocks::kScalePadding floats.
template <size_t R, size_t C>
HWY_INLINE void block_scales(const TileRows& w, const float* const (&xs)[C], size_t b0,
                             size_t count, float (&out)[R][C][kScaleGroup]) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  static_assert(kScaleGroup % hn::MaxLanes(DF()) == 0);
  static_assert(ActivationBlocks::kScalePadding >= kScaleGroup);
  for (size_t b = 0; b < count; b += hn::Lanes(df)) {
    for (size_t rr = 0; rr < R; ++rr) {
      const VF ws = hn::PromoteTo(df, hn::LoadU(dh, w.scales(rr, b0 + b)));
      for (size_t c = 0; c < C; ++c) {
        hn::Store(hn::Mul(ws, hn::LoadU(df, xs[c] + b0 + b)), df, out[rr][c] + b);
      }
    }
  }
}

// Weight rows [r, r + R) x activation rows [i, i + C), over whole rows, their codes held as
// kCodes says. The loops over the tile are unrolled so that its accumulators live in
// registers (GCC -O2 would keep them in memory).
template <size_t R, size_t C, Codes kCodes>
HWY_INLINE void tile(const Problem& p, size_t r, size_t i) {
  const DF df;
  constexpr bool kNibbles = kCodes != Codes::bytes;
  constexpr bool kMinimums = kCodes == Codes::nibbles_with_minimums ||
                             kCodes == Codes::five_bits_with_minimums;
  constexpr int8_t kBias = kCodes == Codes::nibbles ? 8 : 0;
  const TileRows w{p.w.tile(r / kTileRows), r % kTileRows, p.value_bytes, p.minimums_offset,
                   p.fifth_bits_offset};
  const int16_t* xq[C];
  const float* xs[C];
  for (size_t c = 0; c < C; ++c) {
    xq[c] = p.x.q_row(i + c);
    xs[c] = p.x.scale_row(i + c);
  }
  VF acc[R][C];
  HWY_UNROLL(8)
  for (size_t rr = 0; rr < R; ++rr) {
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) acc[rr][c] = hn::Zero(df);
  }
  HWY_ALIGN float scales[R][C][kScaleGroup];
  for (size_t b0 = 0; b0 < p.blocks; b0 += kScaleGroup) {
    const size_t count = std::min(kScaleGroup, p.blocks - b0);
    block_scales<R, C>(w, xs, b0, count, scales);
    // Q5_1: the group's 16 words of fifth bits fill one 64-byte chunk of each row.
    const uint8_t* fifth[R];
    if constexpr (kCodes == Codes::five_bits_with_minimums) {
      for (size_t rr = 0; rr < R; ++rr) fifth[rr] = w.fifth_bits(rr, b0);
    }
    // Line by line: a 64-byte line of a row holds two blocks (four in 4 bits), and the
    // tile's rows have theirs side by side (cpu_matrix.h), so every load below is a fixed
    // step from `line`.
    constexpr size_t kBlockBytes = kNibbles ? kBlock / 2 : kBlock;
    constexpr size_t kPerLine = 64 / kBlockBytes;
    const std::byte* line = w.at(0, b0 * kBlockBytes);
    const int16_t* x_at[C];
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) x_at[c] = xq[c] + b0 * kBlock;
    for (size_t g = 0; g < count; g += kPerLine, line += CpuMatrix::in_tile_offset(0, 64)) {
      const size_t in_line = std::min(kPerLine, count - g);  // fewer at the row's end
      static_assert(kNibbles || kPerLine == 2);
      HWY_UNROLL(8)
      for (size_t rr = 0; rr < R; ++rr) {
        // The same line of the same rows some tiles on. A hint only: past the matrix end it
        // does nothing.
        const std::byte* row_line = line + CpuMatrix::in_tile_offset(rr, 0);
        p.prefetch(row_line + p.ahead_bytes);
        p.prefetch_far(row_line + p.ahead_bytes);
        if constexpr (kNibbles) {
          HWY_UNROLL(2)
          for (size_t k = 0; k < kPerLine; k += 2) {  // a pair of blocks per 32 bytes
            if (k >= in_line) break;
            V16 even[kParts], odd[kParts];
            unpack_pair<kBias>(reinterpret_cast<const uint8_t*>(row_line) + k * kBlockBytes,
                               even, odd);
            const size_t b = g + k;
            if constexpr (kCodes == Codes::five_bits_with_minimums) {
              const bool has_odd = k + 1 < in_line;  // (no word past the row's last block)
              HWY_UNROLL(32)
              for (size_t part = 0; part < kParts; ++part) {
                even[part] = with_fifth_bits(even[part], fifth[rr] + 4 * b, part);
                if (has_odd) {
                  odd[part] = with_fifth_bits(odd[part], fifth[rr] + 4 * (b + 1), part);
                }
              }
            }
            HWY_UNROLL(8)
            for (size_t c = 0; c < C; ++c) {
              acc[rr][c] = hn::MulAdd(codes_dot(even, x_at[c] + b * kBlock),
                                      hn::Set(df, scales[rr][c][b]), acc[rr][c]);
              if (k + 1 < in_line) {
                acc[rr][c] = hn::MulAdd(codes_dot(odd, x_at[c] + (b + 1) * kBlock),
                                        hn::Set(df, scales[rr][c][b + 1]), acc[rr][c]);
              }
            }
          }
        } else {
          const auto* values = reinterpret_cast<const int8_t*>(row_line);
          HWY_UNROLL(8)
          for (size_t c = 0; c < C; ++c) {
            acc[rr][c] = hn::MulAdd(block_dot(values, x_at[c] + g * kBlock),
                                    hn::Set(df, scales[rr][c][g]), acc[rr][c]);
            if (in_line == 2) {
              acc[rr][c] = hn::MulAdd(block_dot(values + kBlock, x_at[c] + (g + 1) * kBlock),
                                      hn::Set(df, scales[rr][c][g + 1]), acc[rr][c]);
            }
          }
        }
      }
    }
  }
  HWY_UNROLL(8)
  for (size_t rr = 0; rr < R; ++rr) {
    // The lines of the later row's scales, which the loop's hints do not reach.
    for (size_t at = p.scales_line; at < p.w.packed_row_bytes(); at += 64) {
      p.prefetch(w.at(rr, at) + p.ahead_bytes);
      p.prefetch_far(w.at(rr, at) + p.ahead_bytes);
    }
    HWY_UNROLL(8)
    for (size_t c = 0; c < C; ++c) {
      float y = hn::GetLane(hn::SumOfLanes(df, acc[rr][c]));
      if constexpr (kMinimums) y += minimum_term(w, rr, p.x.sum_row(i + c), p.blocks);
      p.y[(i + c) * p.y_stride + r + rr] = y;
    }
  }
}

template <size_t R, Codes kCodes>
HWY_INLINE void rows_times_block(const Problem& p, size_t r, size_t i0, size_t i1) {
  size_t i = i0;
  for (; i + kTileCols <= i1; i += kTileCols) tile<R, kTileCols, kCodes>(p, r, i);
  for (; i < i1; ++i) tile<R, 1, kCodes>(p, r, i);
}

template <Codes kCodes>
HWY_INLINE void matmul_rows(const Problem& p, size_t r0, size_t r1) {
  for (size_t i0 = 0; i0 < p.x.n; i0 += kActivationBlock) {
    const size_t i1 = std::min(p.x.n, i0 + kActivationBlock);
    size_t r = r0;
    for (; r < r1 && r % kTileRows != 0; ++r) rows_times_block<1, kCodes>(p, r, i0, i1);
    for (; r + kTileRows <= r1; r += kTileRows) {
      rows_times_block<kTileRows, kCodes>(p, r, i0, i1);
    }
    for (; r < r1; ++r) rows_times_block<1, kCodes>(p, r, i0, i1);
  }
}

void MatmulRowsQ8(const CpuMatrix& w, const ActivationBlocks& x, float* y, size_t y_stride,
                  size_t r0, size_t r1) {
  const size_t row_bytes = w.packed_row_bytes();
  const Problem p{w, x, y, y_stride, x.cols / kBlock,
                  prefetch_rows_ahead(kTileRows, row_bytes, kPrefetchMinBytes) * row_bytes,
                  w.packed_value_bytes() / 64 * 64, w.packed_value_bytes(), w.minimums_offset(),
                  w.fifth_bits_offset(), x.n <= kActivationBlock};
  prefetch_bytes(w.tile(r0 / kTileRows), std::min((r1 - r0) * row_bytes, p.ahead_bytes));
  if (w.dtype() == model::DType::q5_1) {
    matmul_rows<Codes::five_bits_with_minimums>(p, r0, r1);
  } else if (w.dtype() == model::DType::q4_1) {
    matmul_rows<Codes::nibbles_with_minimums>(p, r0, r1);
  } else if (w.dtype() == model::DType::q4_0) {
    matmul_rows<Codes::nibbles>(p, r0, r1);
  } else {
    matmul_rows<Codes::bytes>(p, r0, r1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace parley::backend::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parley::backend::cpu {

HWY_EXPORT(MatmulRowsQ8);

void matmul_rows_q8(const CpuMatrix& w, const ActivationBlocks& x, float* y, size_t y_stride,
                    size_t r0, size_t r1) {
  HWY_DYNAMIC_DISPATCH(MatmulRowsQ8)(w, x, y, y_stride, r0, r1);
}

}  // namespace parley::backend::cpu
#endif  // HWY_ONCE

#include "backend/cpu/cpu_matrix.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "backend/cpu/matrix_arena.h"
#include "backend/cpu/thread_pool.h"
#include "common/alignment.h"
#include "common/error.h"
#include "model/dtype.h"

namespace parley::backend::cpu {
namespace {

constexpr size_t kLine = 64;
constexpr size_t kBlock = model::kQ8BlockValues;

// Whether a matrix of type t holds its codes in nibbles: the types of 4-bit codes (Q5_1's
// fifth bits held apart).
bool nibble_type(model::DType t) {
  return t == model::DType::q4_0 || t == model::DType::q4_1 || t == model::DType::q5_1;
}

// Bytes of a packed row's values: scales start at a multiple of 32 bytes, so that a vector
// of up to 16 of them never crosses a line.
size_t packed_value_bytes(size_t cols, bool nibbles) {
  return nibbles ? round_up(cols / 2, 32) : cols;
}

// F16 scales (or minimums) padded to 32 bytes, so that the kernels read them in whole vectors.
size_t packed_scale_bytes(size_t cols) { return round_up(cols / kBlock * sizeof(uint16_t), 32); }

// Where Q5_1's fifth bits start: at a line, so that 16 blocks' words fill one.
size_t packed_fifth_bits_offset(size_t cols) {
  return round_up(packed_value_bytes(cols, true) + 2 * packed_scale_bytes(cols), kLine);
}

size_t packed_stride(const model::TensorView& w) {
  const size_t cols = size_t(w.cols);
  if (w.dtype == model::DType::q5_1) {  // a 32-bit word of fifth bits per block
    return round_up(packed_fifth_bits_offset(cols) + cols / kBlock * 4, kLine);
  }
  size_t bytes = packed_value_bytes(cols, nibble_type(w.dtype)) + packed_scale_bytes(cols);
  if (model::has_minimums(w.dtype)) bytes += packed_scale_bytes(cols);
  return round_up(bytes, kLine);
}

// The bytes of one row as tiled: packed for the block types.
size_t row_bytes_of(const model::TensorView& w) {
  return model::is_blocked(w.dtype) ? packed_stride(w)
                                    : model::row_bytes(w.dtype, size_t(w.cols));
}

size_t tile_stride_of(const model::TensorView& w) {
  return round_up(row_bytes_of(w), kLine) * kTileRows;
}

size_t tiles_of(const model::TensorView& w) { return (size_t(w.rows) + kTileRows - 1) / kTileRows; }

// Where value k of block b lies in a row of nibbles (cpu_matrix.h): blocks 2i and 2i + 1
// share the 32 bytes from 32i, value k of each in byte k, the even block's in the low nibble.
size_t nibble_byte(size_t b, size_t k) { return b / 2 * kBlock + k; }
int nibble_shift(size_t b) { return int(b % 2) * 4; }

// Row r of a Q8_0 matrix packed into `out` (packed_stride bytes, zeroed): values as bytes,
// then the scales.
void pack_q8_0_row(const model::TensorView& w, size_t r, std::byte* out) {
  const size_t cols = size_t(w.cols), blocks = cols / kBlock;
  const auto* src = reinterpret_cast<const model::Q8Block*>(w.row(int64_t(r)));
  auto* scales = reinterpret_cast<uint16_t*>(out + packed_value_bytes(cols, false));
  for (size_t b = 0; b < blocks; ++b) {
    std::memcpy(out + b * kBlock, src[b].q, kBlock);
    scales[b] = src[b].d;
  }
}

// Row r of a Q4_0, Q4_1 or Q5_1 matrix packed into `out` (zeroed): the low four bits of the
// codes in nibbles (Q4_0's code + 8, as the file has them), the scales, the minimums, and for
// Q5_1 each block's word of fifth bits as it is. (A block has value k's low bits in byte
// k % 16, the low nibble for k < 16.)
template <class Block>
void pack_nibbles_row(const model::TensorView& w, size_t r, std::byte* out) {
  const size_t cols = size_t(w.cols), blocks = cols / kBlock;
  const auto* src = reinterpret_cast<const Block*>(w.row(int64_t(r)));
  auto* values = reinterpret_cast<uint8_t*>(out);
  auto* scales = reinterpret_cast<uint16_t*>(out + packed_value_bytes(cols, true));
  auto* minimums = scales + packed_scale_bytes(cols) / sizeof(uint16_t);
  std::byte* fifth_bits = out + packed_fifth_bits_offset(cols);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t k = 0; k < kBlock; ++k) {
      const uint8_t byte = src[b].q[k % model::kQ4BlockBytes];
      const int code = k < model::kQ4BlockBytes ? byte & 0x0f : byte >> 4;
      values[nibble_byte(b, k)] |= uint8_t(code << nibble_shift(b));
    }
    scales[b] = src[b].d;
    if constexpr (!std::is_same_v<Block, model::Q4_0Block>) minimums[b] = src[b].m;
    if constexpr (std::is_same_v<Block, model::Q5_1Block>) {
      std::memcpy(fifth_bits + 4 * b, src[b].qh, 4);
    }
  }
}

void pack_row(const model::TensorView& w, size_t r, std::byte* out) {
  std::memset(out, 0, packed_stride(w));  // every byte defined, padding zero
  switch (w.dtype) {
    case model::DType::q4_0: pack_nibbles_row<model::Q4_0Block>(w, r, out); break;
    case model::DType::q4_1: pack_nibbles_row<model::Q4_1Block>(w, r, out); break;
    case model::DType::q5_1: pack_nibbles_row<model::Q5_1Block>(w, r, out); break;
    default: pack_q8_0_row(w, r, out); break;
  }
}

// Tiles [t0, t1) of w into `out` (tiled layout, cpu_matrix.h), every byte written once.
void tile_rows(const model::TensorView& w, size_t stride, size_t t0, size_t t1, std::byte* out) {
  const bool packs = model::is_blocked(w.dtype);
  const size_t row_bytes = row_bytes_of(w);
  std::vector<std::byte> packed(packs ? row_bytes : 0);
  for (size_t t = t0; t < t1; ++t) {
    std::byte* tile = out + t * stride;
    for (size_t i = 0; i < kTileRows; ++i) {
      const size_t r = t * kTileRows + i;
      const bool real = r < size_t(w.rows);
      if (real && packs && row_bytes > 0) pack_row(w, r, packed.data());
      const std::byte* row = !real ? nullptr : packs ? packed.data() : w.row(int64_t(r));
      for (size_t b = 0; b < stride / kTileRows; b += kLine) {
        std::byte* chunk = tile + CpuMatrix::in_tile_offset(i, b);
        const size_t n = real && b < row_bytes ? std::min(kLine, row_bytes - b) : 0;
        if (n > 0) std::memcpy(chunk, row + b, n);
        std::memset(chunk + n, 0, kLine - n);
      }
    }
  }
}

}  // namespace

void CpuMatrix::FreeBytes::operator()(std::byte* p) const { std::free(p); }

size_t CpuMatrix::copy_bytes(const model::TensorView& w) {
  return std::max(tiles_of(w) * tile_stride_of(w), kLine);
}

CpuMatrix::CpuMatrix(const model::TensorView& w, ThreadPool* pool, MatrixArena* arena)
    : view_(w) {
  require(!model::is_blocked(w.dtype) || size_t(w.cols) % model::kQ8BlockValues == 0,
          Status::internal,
          std::string(model::dtype_name(w.dtype)) + " matrix " + w.name +
              " has a row length not a multiple of 32");
  nibbles_ = nibble_type(w.dtype);
  stride_ = tile_stride_of(w);
  const size_t bytes = std::max(tiles_of(w) * stride_, kLine);
  std::byte* copy = nullptr;
  if (arena) {
    copy = arena->take(bytes);
  } else {
    // aligned_alloc wants a size that is a multiple of the alignment: bytes is one.
    owned_.reset(static_cast<std::byte*>(std::aligned_alloc(kLine, bytes)));
    if (!owned_) throw std::bad_alloc();
    copy = owned_.get();
  }
  const size_t tiles = tiles_of(w);
  const auto fill = [&](size_t t0, size_t t1) { tile_rows(w, stride_, t0, t1, copy); };
  if (pool) {
    pool->parallel_for(tiles, fill);
  } else {
    fill(0, tiles);
  }
  view_.data = copy;
  view_.n_bytes = tiles * stride_;
}

size_t CpuMatrix::packed_value_bytes() const {
  return cpu::packed_value_bytes(size_t(view_.cols), nibbles_);
}

size_t CpuMatrix::minimums_offset() const {
  return packed_value_bytes() + packed_scale_bytes(size_t(view_.cols));
}

size_t CpuMatrix::fifth_bits_offset() const {
  return packed_fifth_bits_offset(size_t(view_.cols));
}

void CpuMatrix::dequantize_row(int64_t r, float* out) const {
  const size_t cols = size_t(view_.cols);
  const auto at = [&](size_t b) { return view_.data + tiled_offset(stride_, size_t(r), b); };
  if (model::is_blocked(dtype())) {
    const bool minimums = model::has_minimums(dtype());
    const bool fifth_bits = dtype() == model::DType::q5_1;
    const size_t scales_at = packed_value_bytes(), minimums_at = minimums_offset();
    const size_t fifth_bits_at = fifth_bits_offset();
    const auto f16_at = [&](size_t byte) {
      uint16_t h;
      std::memcpy(&h, at(byte), sizeof h);
      return model::f16_to_f32(h);
    };
    for (size_t k = 0; k < cols; ++k) {
      const size_t b = k / kBlock, j = k % kBlock;
      const float d = f16_at(scales_at + b * sizeof(uint16_t));
      int code;
      if (nibbles_) {
        code = (uint8_t(*at(nibble_byte(b, j))) >> nibble_shift(b) & 0x0f) - (minimums ? 0 : 8);
      } else {
        code = int8_t(*at(k));
      }
      if (fifth_bits) code |= (uint8_t(*at(fifth_bits_at + 4 * b + j / 8)) >> j % 8 & 1) << 4;
      // As the products weigh it: d * code + m in one rounding of each step.
      out[k] = minimums ? d * float(code) + f16_at(minimums_at + b * sizeof(uint16_t))
                        : d * float(code);
    }
    return;
  }
  const size_t value_bytes = model::row_bytes(dtype(), 1);
  for (size_t k = 0; k < cols; ++k) {
    const std::byte* v = at(k * value_bytes);
    switch (dtype()) {
      case model::DType::f32: std::memcpy(&out[k], v, sizeof(float)); break;
      case model::DType::f16:
      case model::DType::bf16: {
        uint16_t h;
        std::memcpy(&h, v, sizeof h);
        out[k] = dtype() == model::DType::f16 ? model::f16_to_f32(h) : model::bf16_to_f32(h);
        break;
      }
      case model::DType::q8_0:
      case model::DType::q4_0:
      case model::DType::q4_1:
      case model::DType::q5_1: break;
    }
  }
}

}  // namespace parley::backend::cpu

// A weight matrix as the CPU products read it: a copy made once, when the backend is built,
// in a layout the products stream in address order.
//
// Q8_0 rows are repacked: each row holds its blocks' 8-bit values side by side, then the
// blocks' F16 scales, then zeros to a multiple of 64 bytes. In the file's layout (34-byte
// blocks) every other 32-byte load straddles two cache lines and each block's scale is a load
// and a conversion of its own; packed, two blocks' values fill one line and up to 16 scales
// convert in one vector. Q8_0 decode ran 1.1-1.4x faster so on a 2-core AVX-512 machine.
// Q4_0 rows are packed the same way with their values in nibbles: half the bytes to stream,
// products bit for bit those of Q8_0 blocks with the same codes (TinyLlama shape: decode
// 1.4-1.5x faster than Q8_0, prefill 0.81-0.86x for the unpacking; bench/RESULTS.md). Q4_1
// and Q5_1 rows too, their codes in nibbles, then their scales, their minimums and (Q5_1)
// their fifth bits.
//
// Rows are then tiled (block rows as packed, F32/F16/BF16 rows as they are): a product reads
// kTileRows rows side by side, so those rows lie side by side, 64 bytes of each in turn. Row
// after row, a tile's loads were four streams a row apart, which the hardware prefetchers
// follow badly (F16 products with software hints: 41 GB/s); tiled they are one stream (a
// kernel over such tiles: 60.5 GB/s, a plain read of the same bytes 59.1, in the same minutes
// on a 2-core Zen 4 VM; whole F16 decode 1.1-1.3x faster, bench/RESULTS.md). Q8_0 tiles still
// jump to their scale lines; their products keep their software hints (prefetch_hints.h).
//
// The copies live in the backend's huge-page arena (matrix_arena.h); the backend then lets the
// model release the sources (backend.h, WeightRelease), so that a process holds its model once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/weights.h"

namespace parley::backend::cpu {

class MatrixArena;
class ThreadPool;

// Rows per tile of a tiled matrix: the products' register tile.
inline constexpr size_t kTileRows = 4;

class CpuMatrix {
 public:
  // w copied into the layout above: into `arena` (which must outlive this object) when one is
  // given, else into memory this object owns; on the pool's threads when one is given (first
  // touches of fresh memory run faster side by side). w is not read again. Error(internal) for
  // a Q8_0, Q4_0, Q4_1 or Q5_1 row that is not whole blocks of 32 values.
  explicit CpuMatrix(const model::TensorView& w, ThreadPool* pool = nullptr,
                     MatrixArena* arena = nullptr);

  // The bytes the copy of w takes (at least one line).
  static size_t copy_bytes(const model::TensorView& w);

  model::DType dtype() const { return view_.dtype; }
  int64_t rows() const { return view_.rows; }
  int64_t cols() const { return view_.cols; }
  const std::string& name() const { return view_.name; }

  // The matrix's shape and type, and its copy's bytes, read through the accessors below
  // (TensorView::row() does not apply to them).
  const model::TensorView& view() const { return view_; }

  // Tile t holds rows [t * kTileRows, (t + 1) * kTileRows), each row (packed, for Q8_0) cut
  // into 64-byte chunks (the last one padded with zeros), chunk j of every row of the tile one
  // after another, then chunk j + 1. A last tile with fewer rows is padded with zero rows.
  // `tile_stride()` bytes from one tile's start to the next's.
  const std::byte* tile(size_t t) const { return view_.data + t * stride_; }
  size_t tile_stride() const { return stride_; }
  // Where byte b of row i (< kTileRows) of a tile lies, from the tile's start.
  static size_t in_tile_offset(size_t i, size_t b) {
    return b / 64 * (kTileRows * 64) + i * 64 + b % 64;
  }
  // Where byte b of row r lies, from the start of the copy.
  static size_t tiled_offset(size_t tile_stride, size_t r, size_t b) {
    return r / kTileRows * tile_stride + in_tile_offset(r % kTileRows, b);
  }

  // A packed Q8_0 row: `cols` int8 values from byte 0, then cols / 32 F16 scales from byte
  // packed_value_bytes() (= cols), then zeros to at least the next multiple of 32 bytes; this many
  // bytes in all (a multiple of 64). A packed Q4_0 row (nibbles()) has its codes + 8 in 4 bits, two
  // blocks to 32 bytes: value k of blocks 2i and 2i + 1 in the low and high nibble of byte 32i + k
  // (one widening load of 32 bytes gives both blocks' codes in 16-bit lanes, a mask and a shift
  // apart), and the scales start at cols / 2 rounded up to 32 bytes. A packed Q4_1 row is in
  // nibbles too, its codes as they are (0-15), and its F16 minimums follow the scales from byte
  // minimums_offset() (a multiple of 32), then zeros to a multiple of 32. A packed Q5_1 row holds
  // its codes' low four bits so, then each block's 32-bit word of fifth bits (bit k for value k)
  // from fifth_bits_offset() (a multiple of 64, so that the words of blocks 16i to 16i + 15 fill
  // one 64-byte chunk).
  size_t packed_row_bytes() const { return stride_ / kTileRows; }
  bool nibbles() const { return nibbles_; }
  size_t packed_value_bytes() const;
  size_t minimums_offset() const;
  size_t fifth_bits_offset() const;

  // out[cols] = row r as floats, from the copy (the token embedding of a model whose output
  // matrix is tied to it is looked up here, so that the file's pages are not needed again).
  void dequantize_row(int64_t r, float* out) const;

 private:
  struct FreeBytes {
    void operator()(std::byte* p) const;
  };
  model::TensorView view_;
  std::unique_ptr<std::byte, FreeBytes> owned_;  // the copy, unless an arena holds it
  size_t stride_ = 0;                            // bytes per tile
  bool nibbles_ = false;                         // codes in 4 bits (Q4_0, Q4_1, Q5_1)
};

}  // namespace parley::backend::cpu

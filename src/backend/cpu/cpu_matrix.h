// A weight matrix as the CPU products read it. Q8_0 matrices are repacked once, when the
// backend is built: each row holds its blocks' 8-bit values side by side, then the blocks' F16
// scales, and starts on a 64-byte line. In the file's layout (34-byte blocks) every other
// 32-byte load straddles two cache lines and each block's scale is a load and a conversion of
// its own; packed, two blocks' values fill one line and up to 16 scales convert in one vector.
// Q8_0 decode ran 1.1-1.4x faster so on a 2-core AVX-512 machine (bench/RESULTS.md). F32, F16
// and BF16 matrices keep their bytes; those in a model file are copied into the backend's
// huge-page arena (matrix_arena.h), whose 2 MiB pages a file's pages cannot be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/weights.h"

namespace parley::backend::cpu {

class MatrixArena;
class ThreadPool;

class CpuMatrix {
 public:
  // Q8_0: w's rows repacked into memory this object owns, or taken from `arena` (which must
  // outlive it) when one is given; Error(internal) when a row is not whole blocks of 32
  // values. F32/F16/BF16: w's bytes copied into `arena` when one is given and w lies in one of
  // `mapped_files` (the model's read-only file mappings), else read where they are. Copies
  // run on the pool's threads when one is given (first touches of fresh memory run faster
  // side by side); then w's pages in a mapped file are released (release_source_pages), so
  // that the process holds the matrix once.
  explicit CpuMatrix(const model::TensorView& w, ThreadPool* pool = nullptr,
                     std::span<const std::span<const std::byte>> mapped_files = {},
                     MatrixArena* arena = nullptr);

  // The bytes the constructor takes from an arena for w: its packed rows (Q8_0), its bytes
  // (other types, when they lie in one of `mapped_files`), else 0.
  static size_t arena_bytes(const model::TensorView& w,
                            std::span<const std::span<const std::byte>> mapped_files);

  model::DType dtype() const { return view_.dtype; }
  int64_t rows() const { return view_.rows; }
  int64_t cols() const { return view_.cols; }
  const std::string& name() const { return view_.name; }
  bool packed() const { return stride_ != 0; }

  // The matrix's shape, type and bytes (w's own, or their copy); for a packed matrix the bytes
  // are the packed rows, read through the q8 accessors below (TensorView::row() does not
  // apply to them).
  const model::TensorView& view() const { return view_; }

  // Packed Q8_0 rows: `cols` int8 values, then cols / 32 F16 scales, then zeros to at least
  // the next multiple of 32 bytes; `q8_stride()` bytes from one row's start to the next's (a
  // multiple of 64).
  const int8_t* q8_values(size_t r) const {
    return reinterpret_cast<const int8_t*>(view_.data + r * stride_);
  }
  const uint16_t* q8_scales(size_t r) const {
    return reinterpret_cast<const uint16_t*>(view_.data + r * stride_ + size_t(view_.cols));
  }
  size_t q8_stride() const { return stride_; }

  // out[cols] = row r as floats, from the bytes the products read (the token embedding of a
  // model whose output matrix is tied to it reads the backend's copy, so that the file's
  // pages are not needed again).
  void dequantize_row(int64_t r, float* out) const;

 private:
  struct FreeBytes {
    void operator()(std::byte* p) const;
  };
  model::TensorView view_;
  std::unique_ptr<std::byte, FreeBytes> owned_;  // packed rows, unless an arena holds them
  size_t stride_ = 0;                            // packed rows only
};

// True when all of w's bytes lie in one of `mapped_files`.
bool in_mapped_file(const model::TensorView& w,
                    std::span<const std::span<const std::byte>> mapped_files);

// Tells the kernel that this process will not read the source bytes of a copied matrix
// again, when they lie in one of `mapped_files` (read-only file mappings): their pages leave
// the resident set (the page cache keeps them; a later touch maps them again), so a model
// is not held twice. Whole pages inside the source only; a hint, its failure ignored.
// Sources elsewhere (memory the weights own) are left alone.
void release_source_pages(const model::TensorView& source,
                          std::span<const std::span<const std::byte>> mapped_files);

}  // namespace parley::backend::cpu

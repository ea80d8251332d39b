// One mapping for the CPU backend's copies of its weight matrices (Q8_0 repacked, the others
// copied from a model file's pages), handed out front to back, on transparent huge pages
// (common/huge_pages.h). Each matrix of a small model is too small for a 2 MiB page of its own;
// together they fill hundreds.
#pragma once

#include <cstddef>

namespace parley::backend::cpu {

class MatrixArena {
 public:
  // Room for `bytes` (allocations are rounded up to 64 bytes each: see bytes_for()). Throws
  // Error(out_of_memory) when the mapping fails.
  explicit MatrixArena(size_t bytes);
  ~MatrixArena();
  MatrixArena(const MatrixArena&) = delete;
  MatrixArena& operator=(const MatrixArena&) = delete;

  // What take(n) uses of the arena's room.
  static size_t bytes_for(size_t n);

  // The next bytes_for(n) bytes, 64-byte aligned, untouched (zero) memory. Throws
  // Error(internal) past the room given at construction.
  std::byte* take(size_t n);

 private:
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::byte* base_ = nullptr;  // the first 2 MiB boundary in the mapping
  size_t room_ = 0;
  size_t used_ = 0;
};

}  // namespace parley::backend::cpu

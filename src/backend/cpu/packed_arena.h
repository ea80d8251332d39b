// One mapping for the CPU backend's packed Q8_0 matrices, handed out front to back. It asks
// for transparent huge pages (MADV_HUGEPAGE): a decode step streams every matrix once, and
// with 4 KiB pages each page is a TLB miss and a boundary the hardware prefetchers stop at.
// Each matrix of a small model is too small for a 2 MiB page of its own; together they fill
// hundreds. A hint only: where the kernel has no THP the memory is plain pages.
#pragma once

#include <cstddef>

namespace parley::backend::cpu {

class PackedArena {
 public:
  // Room for `bytes` (allocations are rounded up to 64 bytes each: see bytes_for()). Throws
  // Error(out_of_memory) when the mapping fails.
  explicit PackedArena(size_t bytes);
  ~PackedArena();
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;

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

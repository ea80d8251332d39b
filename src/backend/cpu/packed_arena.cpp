#include "backend/cpu/packed_arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.h"

namespace parley::backend::cpu {
namespace {

constexpr size_t kLine = 64;
constexpr size_t kHugePage = size_t(2) << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

PackedArena::PackedArena(size_t bytes) : room_(round_up(bytes, kLine)) {
  if (room_ == 0) return;
  // One huge page more than needed, so that the arena can start on a 2 MiB boundary; the
  // pages before it are never touched and cost no memory.
  mapping_bytes_ = room_ + kHugePage;
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Error(Status::out_of_memory, "cannot map " + std::to_string(room_) +
                                           " bytes for the packed Q8_0 matrices: " +
                                           std::strerror(errno));
  }
  base_ = reinterpret_cast<std::byte*>(
      round_up(reinterpret_cast<uintptr_t>(mapping_), kHugePage));
  madvise(base_, room_, MADV_HUGEPAGE);  // a hint; failure is harmless
}

PackedArena::~PackedArena() {
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

size_t PackedArena::bytes_for(size_t n) { return round_up(n, kLine); }

std::byte* PackedArena::take(size_t n) {
  const size_t bytes = bytes_for(n);
  require(bytes <= room_ - used_, Status::internal,
          "packed matrices need more than the " + std::to_string(room_) + " bytes set aside");
  std::byte* p = base_ + used_;
  used_ += bytes;
  return p;
}

}  // namespace parley::backend::cpu

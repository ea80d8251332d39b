#include "backend/cpu/matrix_arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/alignment.h"
#include "common/error.h"
#include "common/huge_pages.h"

namespace parley::backend::cpu {
namespace {

constexpr size_t kLine = 64;

}  // namespace

MatrixArena::MatrixArena(size_t bytes) : room_(round_up(bytes, kLine)) {
  if (room_ == 0) return;
  // One huge page more than needed, so that the arena can start on a 2 MiB boundary; the
  // pages before it are never touched and cost no memory.
  mapping_bytes_ = room_ + kHugePageBytes;
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Error(Status::out_of_memory, "cannot map " + std::to_string(room_) +
                                           " bytes for the CPU backend's weight matrices: " +
                                           std::strerror(errno));
  }
  base_ = reinterpret_cast<std::byte*>(
      round_up(reinterpret_cast<uintptr_t>(mapping_), kHugePageBytes));
  advise_huge_pages(base_, room_);
}

MatrixArena::~MatrixArena() {
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

size_t MatrixArena::bytes_for(size_t n) { return round_up(n, kLine); }

std::byte* MatrixArena::take(size_t n) {
  const size_t bytes = bytes_for(n);
  require(bytes <= room_ - used_, Status::internal,
          "the CPU backend's matrices need more than the " + std::to_string(room_) +
              " bytes set aside");
  std::byte* p = base_ + used_;
  used_ += bytes;
  return p;
}

}  // namespace parley::backend::cpu

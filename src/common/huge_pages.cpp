#include "common/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

#include "common/alignment.h"

namespace parley {

void advise_huge_pages(void* p, size_t n) {
  const auto begin = round_up(reinterpret_cast<uintptr_t>(p), kHugePageBytes);
  const auto end = (reinterpret_cast<uintptr_t>(p) + n) / kHugePageBytes * kHugePageBytes;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace parley

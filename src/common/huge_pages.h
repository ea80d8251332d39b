// Transparent huge pages for memory that a decode step streams in full (weight matrices).
// With 4 KiB pages every page of such a stream is a TLB miss and a boundary at which the
// hardware prefetchers stop; 2 MiB pages remove both (bench/RESULTS.md, 2-core Zen 4
// machine: Q8_0 decode up to 1.16x faster, stories110m F16 decode 1.03x).
#pragma once

#include <cstddef>

namespace parley {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// Asks the kernel to back the whole 2 MiB pages inside [p, p + n) with huge pages
// (MADV_HUGEPAGE) when they are first touched. A hint: where the kernel has no transparent
// huge pages, or the range holds no whole huge page, nothing changes; its failure is
// ignored. p must be anonymous memory this process owns (not a file mapping).
void advise_huge_pages(void* p, size_t n);

}  // namespace parley

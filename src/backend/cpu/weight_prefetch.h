// How far ahead of its loads a batch-1 (decode) product asks for weight bytes. The hardware
// prefetcher alone does not follow a register tile's R short row streams at once, and decode
// is bound by how many weight bytes are in flight, so the kernels issue their own hints.
#pragma once

#include <algorithm>
#include <cstddef>

#include <hwy/base.h>
#include <hwy/cache_control.h>

namespace parley::backend::cpu {

// Rows ahead: whole tiles (a hint into the current tile asks for what its own loads fetch at
// the same moment), together at least min_bytes. How far is enough depends on how fast the
// kernel consumes a byte; each kernel states its own distance. Rows of no bytes: none.
inline constexpr size_t prefetch_rows_ahead(size_t tile_rows, size_t row_bytes,
                                            size_t min_bytes) {
  const size_t tile_bytes = tile_rows * row_bytes;
  if (tile_bytes == 0) return 0;
  return (min_bytes + tile_bytes - 1) / tile_bytes * tile_rows;
}

// Asks for the first bytes of a thread's row range, which the hints inside the loop (always
// ahead of the loads) never cover, so that the range's start does not wait on memory line by
// line. Always inlined: GCC deletes calls to a function that only prefetches when it leaves it
// out of line (tests/unit/backend/check_prefetch_hints.cmake).
HWY_INLINE void prefetch_lead(const std::byte* first, size_t range_bytes, size_t lead_bytes) {
  const size_t n = std::min(range_bytes, lead_bytes);
  for (size_t at = 0; at < n; at += 64) hwy::Prefetch(first + at);
}

}  // namespace parley::backend::cpu

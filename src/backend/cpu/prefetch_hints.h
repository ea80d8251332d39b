// Software prefetch hints of the CPU kernels. The Q8_0 decode products and the attention are
// bound by how many bytes are in flight, and the hardware prefetcher does not follow their
// streams well (a tile's value lines with a jump to its scale lines, one head's K/V rows), so
// they ask ahead themselves. The F32/F16/BF16 products read their tiled copies (cpu_matrix.h)
// in address order and ask for nothing: with hints they ran slower.
#pragma once

#include <cstddef>
#include <cstdint>

#include <hwy/base.h>
#include <hwy/cache_control.h>

namespace parley::backend::cpu {

// Asks for the line at p for bytes read once (weights streamed through a product): fetched for
// this core without displacing what the caches hold for longer (prefetchnta on x86). Against
// prefetcht0 on a 2-core AVX-512 machine: stories110m F16 decode 7 % faster (when the F16
// products read rows in place), Q8_0 products over packed rows 0-12 % (alternated runs).
HWY_INLINE void prefetch_stream(const void* p) { __builtin_prefetch(p, 0, 0); }

// Asks for the line at p into L2 (prefetcht1 on x86). The Q8_0 weight and K/V streams also ask
// this way, twice as far ahead as their near hints: a core keeps only a few lines in flight
// towards L1, and a near hint alone left too few bytes in flight on a 2-core AMD EPYC (Zen 4)
// VM. Decode tokens alternated with and without the far hints in one process, 2 threads:
// stories110m Q8_0 6.0-6.9 -> 3.7-4.0 ms per token, F16 (rows read in place, then)
// 11.1-12.6 -> 8.3-9.0; TinyLlama Q8_0 45-47 -> 23-36, F16 71-76 -> 50-59 (bench/RESULTS.md).
HWY_INLINE void prefetch_to_l2(const void* p) { __builtin_prefetch(p, 0, 2); }

// Asks for every cache line that [p, p + bytes) touches, wherever in a line p starts; into L2
// only when to_l2 (prefetcht1 on x86). Always inlined: GCC deletes calls to a function that
// only prefetches when it leaves it out of line (tests/unit/backend/check_prefetch_hints.cmake).
HWY_INLINE void prefetch_bytes(const std::byte* p, size_t bytes, bool to_l2 = false) {
  if (bytes == 0) return;
  const uintptr_t last = reinterpret_cast<uintptr_t>(p) + bytes - 1;
  for (uintptr_t line = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63); line <= last;
       line += 64) {
    if (to_l2) {
      prefetch_to_l2(reinterpret_cast<const void*>(line));
    } else {
      hwy::Prefetch(reinterpret_cast<const void*>(line));
    }
  }
}

// How far ahead of its loads a product asks for weight rows: whole tiles (a hint into the
// current tile asks for what its own loads fetch at the same moment), together at least
// min_bytes. How far is enough depends on how fast the kernel consumes a byte; each kernel
// states its own distance. Rows of no bytes: none. A thread's range starts cold, so the
// kernels also ask for its first that-many bytes before the loop (whose hints run ahead).
inline constexpr size_t prefetch_rows_ahead(size_t tile_rows, size_t row_bytes,
                                            size_t min_bytes) {
  const size_t tile_bytes = tile_rows * row_bytes;
  if (tile_bytes == 0) return 0;
  return (min_bytes + tile_bytes - 1) / tile_bytes * tile_rows;
}

}  // namespace parley::backend::cpu

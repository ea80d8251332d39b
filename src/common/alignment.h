// Rounding sizes and addresses up to a boundary (cache lines, huge pages, row blocks).
#pragma once

#include <cstddef>

namespace parley {

// n rounded up to a multiple of `to` (> 0).
constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace parley

// The sliding-window rule of causal attention, shared by the CPU attention and the kernels.
#pragma once

#include <stdint.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

// The first position a query at `pos` attends to: 0 without a window (window 0), else the
// first of the last `window` positions, the query's own included.
PARLEY_HD int32_t window_first_key(int32_t pos, int32_t window) {
  return window > 0 && pos + 1 > window ? pos + 1 - window : 0;
}

// The keys that query rows at positions [first_pos, last_pos] see between them: from the
// first row's window start to the last row itself.
struct KeySpan {
  int32_t first;
  int32_t last;
};
PARLEY_HD KeySpan visible_keys(int32_t first_pos, int32_t last_pos, int32_t window) {
  return {window_first_key(first_pos, window), last_pos};
}

}  // namespace parley::kernels

// How decode attention splits the cache (flash-decoding): fixed once per backend so every
// layer and every replay of the captured decode step use the same grid; each split's share
// of the cache is derived on the device from the step's position.
#pragma once

#include <cstdint>

namespace parley::backend::cuda {

struct DecodePlan {
  int32_t n_splits = 1;
};

// Enough (split, KV head) blocks for about four per multiprocessor (each block's warps walk
// their own cache blocks, so more blocks mean more loads in flight), at most 64 splits.
DecodePlan make_decode_plan(int32_t n_sms, int32_t n_kv_heads);

}  // namespace parley::backend::cuda

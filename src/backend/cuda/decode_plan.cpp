#include "backend/cuda/decode_plan.h"

#include <algorithm>

#include "kernels/launch.h"

namespace parley::backend::cuda {

DecodePlan make_decode_plan(int32_t n_sms, int32_t n_kv_heads) {
  const int32_t want = (4 * std::max(1, n_sms) + n_kv_heads - 1) / std::max(1, n_kv_heads);
  return DecodePlan{std::clamp(want, 1, kernels::kMaxDecodeSplits)};
}

}  // namespace parley::backend::cuda

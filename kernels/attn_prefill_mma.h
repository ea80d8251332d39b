// The tensor-core prefill attention that launch_attn_prefill hands INT8 and F16 caches to.
#pragma once

#include "kernels/launch.h"

namespace parley::kernels {

cudaError_t launch_attn_prefill_mma(const AttnPrefillArgs& args, cudaStream_t stream);

}  // namespace parley::kernels

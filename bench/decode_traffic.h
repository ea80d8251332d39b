// Bytes one decode step must read from memory: every weight once, as the CPU holds it (the
// embedding only one row), plus the K/V of every token in the context.
#pragma once

#include <cstdint>

#include "model/weights.h"

namespace parley::bench {

uint64_t weight_bytes_per_token(const model::Weights& weights);

// The mean K/V bytes read per generated token while decoding `gen_tokens` after
// `prompt_tokens`: the step that yields token i+1 attends over prompt_tokens + i tokens.
double kv_bytes_read_per_token(uint64_t kv_bytes_per_token, uint32_t prompt_tokens,
                               uint32_t gen_tokens);

}  // namespace parley::bench

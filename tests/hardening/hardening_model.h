// The synthetic model the hardening tests run on.
#pragma once

#include <cstdint>
#include <string>

#include "api_helpers.h"

namespace parley::test {

// A GGUF file written once per process: 8 layers x 4 KV heads of 32 (MHA over a width of 64),
// so a conversation's INT8 KV (2,304 bytes per token, 36 KiB per block) is large next to its
// compute; context 1024. The output rows of control and byte tokens are silenced, so every
// greedy reply token is a word piece and streams text.
const std::string& hardening_model();
constexpr uint64_t kHardeningBlockBytes = 16 * (8 * 2 * 4 * 32 + 8 * 2 * 4 * 4);

}  // namespace parley::test

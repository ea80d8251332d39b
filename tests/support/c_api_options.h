// C API arguments that many tests (and their helper processes) share.
#pragma once

#include <cstdint>

#include "parley.h"

namespace parley::test {

// Greedy decoding of exactly max_tokens tokens (end of sequence ignored), so that every run
// does the same work and replies can be compared token for token.
inline parley_generate_options greedy_options(uint32_t max_tokens) {
  parley_generate_options g;
  parley_generate_options_init(&g);
  g.temperature = 0;
  g.max_tokens = max_tokens;
  g.ignore_eos = 1;
  return g;
}

}  // namespace parley::test

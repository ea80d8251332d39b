// Timed turns on new sessions: a prompt of P tokens (or, where the text cannot be cut to
// exactly P, a few fewer), then exactly G generated.
// Shared by the prefill and decode scenarios.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "token_timing.h"

namespace parley::bench {

struct GenerationRuns {
  std::vector<TimedTurn> runs;
  uint32_t prompt_tokens = 0;   // as the engine counted them (BOS included)
  uint32_t context_tokens = 0;  // in the cache when generation started

  std::vector<double> ttft_ms() const;
  std::vector<double> prefill_tok_s() const;
  // Every token gap of every run, pooled.
  std::vector<double> tpot_ms() const;
};

// `repeat` runs with the raw template; each run has its own cache scope, so no run reuses
// another's prefix blocks. Throws Error(context_full) when P + G exceed the context.
GenerationRuns run_generations(const std::shared_ptr<engine::Engine>& engine,
                               uint32_t prompt_tokens, uint32_t gen_tokens, uint32_t repeat);

}  // namespace parley::bench

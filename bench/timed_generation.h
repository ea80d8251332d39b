// Timed turns on new sessions: a prompt of P tokens (or, where the text cannot be cut to
// exactly P, the nearest length that it can), then exactly G generated.
// Shared by the prefill and decode scenarios.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "text/tokenizer.h"
#include "token_timing.h"

namespace parley::bench {

struct GenerationRuns {
  std::vector<TimedTurn> runs;
  uint32_t prompt_tokens = 0;   // as the engine counted them (BOS included)
  uint32_t context_tokens = 0;  // in the cache when generation started
  uint32_t reused_tokens = 0;   // the most any run found in the prefix cache: 0 when none did

  std::vector<double> ttft_ms() const;
  std::vector<double> prefill_tok_s() const;
  // Every token gap of every run, pooled.
  std::vector<double> tpot_ms() const;
};

// The texts whose raw-template first turn (BOS + the text) has each `wanted` length capped to
// `cap` tokens, in order. A length no cut of the text reaches gets the nearest one below it,
// or a longer one where none is below. Lengths that come to the same count of tokens (capping
// makes them equal, or no cut reaches them) give one text.
std::vector<std::string> distinct_prompts(const text::Tokenizer& tokenizer,
                                          const std::vector<uint32_t>& wanted, uint32_t cap);

// `repeat` runs of `prompt` with the raw template. Each run has a cache scope no other run in
// this process has had, so no run reuses the prefix blocks of another, whatever its length.
// Throws Error(context_full) when the prompt and G tokens exceed the context.
GenerationRuns run_generations(const std::shared_ptr<engine::Engine>& engine,
                               const std::string& prompt, uint32_t gen_tokens, uint32_t repeat);

}  // namespace parley::bench

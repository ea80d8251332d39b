// One turn with a timestamp for every generated token, taken in the text sink as each token
// streams out: TPOT median and p90 then describe single tokens, not whole turns.
#pragma once

#include <string_view>
#include <vector>

#include "engine/session.h"

namespace parley::bench {

struct TimedTurn {
  engine::TurnStats stats;
  // Milliseconds from one generated token to the next, one entry per token after the first.
  std::vector<double> tpot_ms;

  // Tokens in the cache when generation started: what each decode step attends over, at least.
  uint32_t context_tokens() const { return stats.reused_tokens + stats.computed_tokens; }
  // Computed tokens / TTFT.
  double prefill_tok_s() const;
};

// session.send() with a sink that timestamps every token.
TimedTurn send_timed(engine::Session& session, std::string_view user_text,
                     const engine::GenerateParams& params);

}  // namespace parley::bench

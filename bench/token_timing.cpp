#include "token_timing.h"

#include "engine/clock.h"

namespace parley::bench {

double TimedTurn::prefill_tok_s() const {
  return stats.ttft_ms > 0 ? stats.computed_tokens * 1000.0 / stats.ttft_ms : 0;
}

TimedTurn send_timed(engine::Session& session, std::string_view user_text,
                     const engine::GenerateParams& params) {
  TimedTurn turn;
  // The sink runs once per token whose text is complete, but a token that ends inside a UTF-8
  // sequence streams nothing and the detokenizer's tail streams after the last token. So the
  // session's token count, not the number of calls, says how many tokens each gap covers.
  size_t last_count = 0;
  double last_ms = 0;
  const engine::TextSink sink = [&](std::string_view) {
    const double t = engine::now_ms();
    const size_t count = session.tokens().size();
    if (count == last_count) return true;  // the tail: no new token
    if (last_count != 0) {
      const double gap = (t - last_ms) / double(count - last_count);
      turn.tpot_ms.insert(turn.tpot_ms.end(), count - last_count, gap);
    }
    last_count = count;
    last_ms = t;
    return true;
  };
  session.send(user_text, params, sink, turn.stats);
  return turn;
}

}  // namespace parley::bench

// turn: one conversation of several turns. With the KV cache kept between turns, each turn
// should compute only its own new tokens, however long the conversation grows.
#include <algorithm>

#include "decode_timing_fields.h"
#include "prompt_text.h"
#include "scenarios.h"
#include "token_timing.h"

namespace parley::bench {
namespace {

// The reply length that lets every turn fit in the context (at most --turn-tokens).
uint32_t reply_tokens_that_fit(const engine::Engine& engine, uint32_t turns, uint32_t wanted) {
  const text::ChatTemplate tmpl(text::TemplateKind::llama2, engine.tokenizer());
  const auto& messages = short_messages();
  size_t prompts = 0;
  for (uint32_t t = 0; t < turns; ++t) {
    prompts += tmpl.render_user_turn("", messages[t % messages.size()], t == 0).size();
    // What ends each reply (at most: the close of an empty one), and the pending token.
    prompts += tmpl.close_reply({}).size() + 1;
  }
  const size_t context = engine.context_length();
  if (prompts >= context) return 0;
  return uint32_t(std::min<size_t>(wanted, (context - prompts) / turns));
}

}  // namespace

void run_turn(BenchContext& ctx) {
  const uint32_t turns = ctx.args().turns;
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    const auto engine = ctx.make_engine(kv);
    const uint32_t reply_tokens = reply_tokens_that_fit(*engine, turns, ctx.args().turn_tokens);
    if (reply_tokens < 2) {
      ctx.write_skipped("turn", *engine,
                        "the context is too short for " + std::to_string(turns) + " turns");
      continue;
    }
    warm_up(engine);
    engine::SessionOptions options;
    options.chat_template = text::TemplateKind::llama2;
    engine::Session session(engine, options);
    const auto& messages = short_messages();
    for (uint32_t t = 0; t < turns; ++t) {
      const TimedTurn turn =
          send_timed(session, messages[t % messages.size()], fixed_length_params(reply_tokens));
      nlohmann::ordered_json line = ctx.line("turn", *engine);
      line["prompt_tokens"] = turn.stats.prompt_tokens;
      line["context_tokens"] = turn.context_tokens();
      line["generated_tokens"] = turn.stats.generated_tokens;
      line["prefill_tok_s"] = turn.prefill_tok_s();
      line["ttft_ms"] = turn.stats.ttft_ms;
      put_decode_timings(line, turn.tpot_ms);
      line["turn"] = t + 1;
      line["reused_tokens"] = turn.stats.reused_tokens;
      line["computed_tokens"] = turn.stats.computed_tokens;
      line["conversation_tokens"] = session.tokens().size();
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench

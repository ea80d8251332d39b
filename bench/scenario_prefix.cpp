// prefix: N sessions with one system prompt each send a short message. The first computes
// the prompt; the others should find its blocks in the prefix cache, so their TTFT covers
// only their own message. Then one more, in a cache scope of its own, computes the prompt
// with Session::prepare before its message: its TTFT should be the others'.
#include <algorithm>

#include "engine/clock.h"

#include "prompt_text.h"
#include "scenarios.h"
#include "summary_stats.h"
#include "token_timing.h"

namespace parley::bench {
namespace {

constexpr uint32_t kReplyTokens = 4;  // TTFT is the figure; the reply only has to start

nlohmann::ordered_json block_stats(const engine::EngineStats& s) {
  return {{"used", s.blocks.used},
          {"shared", s.blocks.shared},
          {"cached", s.blocks.cached},
          {"prefix_hits", s.blocks.prefix_hits},
          {"prefix_misses", s.blocks.prefix_misses},
          {"kv_bytes_resident", s.kv_bytes_resident}};
}

// A line for one session's first turn: its figures, and how much of its prompt was found.
nlohmann::ordered_json turn_line(BenchContext& ctx, engine::Engine& engine,
                                 const TimedTurn& turn, const char* part) {
  nlohmann::ordered_json line = ctx.line("prefix", engine);
  line["prompt_tokens"] = turn.stats.prompt_tokens;
  line["context_tokens"] = turn.context_tokens();
  line["generated_tokens"] = turn.stats.generated_tokens;
  line["prefill_tok_s"] = turn.prefill_tok_s();
  line["ttft_ms"] = turn.stats.ttft_ms;
  line["part"] = part;
  line["reused_tokens"] = turn.stats.reused_tokens;
  line["computed_tokens"] = turn.stats.computed_tokens;
  return line;
}

}  // namespace

void run_prefix(BenchContext& ctx) {
  const uint32_t n_sessions = ctx.args().sessions;
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    const auto engine = ctx.make_engine(kv);
    // Room for the system prompt, the template around it, a message and the reply.
    if (ctx.args().system_tokens + 64 + kReplyTokens > engine->context_length()) {
      ctx.write_skipped("prefix", *engine, "--system-tokens leaves no room in the context");
      continue;
    }
    warm_up(engine);
    engine::SessionOptions options;
    options.system_prompt = text_of_tokens(engine->tokenizer(), ctx.args().system_tokens);
    options.chat_template = text::TemplateKind::llama2;
    const auto system_ids = text::ChatTemplate(text::TemplateKind::llama2, engine->tokenizer())
                                .render_system(options.system_prompt);

    std::vector<std::unique_ptr<engine::Session>> sessions;
    std::vector<double> ttft;
    for (uint32_t i = 0; i < n_sessions; ++i) {
      sessions.push_back(std::make_unique<engine::Session>(engine, options));
      const auto& messages = short_messages();
      const TimedTurn turn = send_timed(*sessions.back(), messages[i % messages.size()],
                                        fixed_length_params(kReplyTokens));
      ttft.push_back(turn.stats.ttft_ms);
      nlohmann::ordered_json line = turn_line(ctx, *engine, turn, "session");
      line["session"] = i + 1;
      ctx.write(line);
    }

    const engine::EngineStats live = engine->stats();
    sessions.clear();
    const engine::EngineStats closed = engine->stats();

    engine::SessionOptions own_scope = options;
    own_scope.cache_scope = "prepared";
    engine::Session prepared(engine, own_scope);
    engine::TurnStats prepare_stats;
    const double prepare_start = engine::now_ms();
    {
      const auto use = prepared.try_use();
      prepared.prepare(prepare_stats);
    }
    const double prepare_ms = engine::now_ms() - prepare_start;
    const TimedTurn after = send_timed(prepared, short_messages()[0],
                                       fixed_length_params(kReplyTokens));
    nlohmann::ordered_json prepared_line = turn_line(ctx, *engine, after, "prepared");
    prepared_line["prepare_ms"] = prepare_ms;
    prepared_line["prepared_tokens"] = prepare_stats.computed_tokens;
    ctx.write(prepared_line);

    const double rest = median(std::vector<double>(ttft.begin() + 1, ttft.end()));
    nlohmann::ordered_json line = ctx.line("prefix", *engine);
    line["part"] = "summary";
    line["sessions"] = n_sessions;
    line["system_tokens"] = system_ids.size();
    line["ttft_first_ms"] = ttft.front();
    line["ttft_rest_median_ms"] = rest;
    line["ttft_ratio"] = rest > 0 ? ttft.front() / rest : 0;
    line["ttft_prepared_ms"] = after.stats.ttft_ms;
    line["blocks_live"] = block_stats(live);
    line["blocks_after_close"] = block_stats(closed);
    ctx.write(line);
  }
}

}  // namespace parley::bench

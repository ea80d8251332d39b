// prefill: a prompt of P tokens and a single generated token, so TTFT is the prompt's cost.
#include "peak_rss.h"
#include "scenarios.h"
#include "summary_stats.h"
#include "timed_generation.h"

namespace parley::bench {

void run_prefill(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    if (a.prompt_tokens + 1 > engine->context_length()) {
      ctx.write_skipped("prefill", *engine, "--prompt-tokens exceeds the context");
      continue;
    }
    warm_up(engine);
    const GenerationRuns runs = run_generations(engine, a.prompt_tokens, 1, a.repeat);
    nlohmann::ordered_json line = ctx.line("prefill", *engine);
    line["prompt_tokens"] = runs.prompt_tokens;
    line["runs"] = runs.runs.size();
    line["prefill_tok_s_median"] = median(runs.prefill_tok_s());
    line["ttft_ms_median"] = median(runs.ttft_ms());
    line["ttft_ms_p90"] = quantile(runs.ttft_ms(), 0.9);
    line["peak_rss_mb"] = peak_rss_mb();
    ctx.out().write(line);
  }
}

}  // namespace parley::bench

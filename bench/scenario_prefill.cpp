// prefill: a prompt of P tokens and a single generated token, so TTFT is the prompt's cost.
// Each --prompt-tokens length is capped to what the context holds (the one generated token
// needs a slot too); lengths that capping makes equal run once.
#include "scenarios.h"
#include "summary_stats.h"
#include "timed_generation.h"

namespace parley::bench {

void run_prefill(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    warm_up(engine);
    const uint32_t cap = engine->context_length() - 1;
    for (const std::string& prompt : distinct_prompts(engine->tokenizer(), a.prompt_tokens, cap)) {
      const GenerationRuns runs = run_generations(engine, prompt, 1, a.repeat);
      nlohmann::ordered_json line = ctx.line("prefill", *engine);
      line["prompt_tokens"] = runs.prompt_tokens;
      line["generated_tokens"] = 1;
      line["prefill_tok_s"] = median(runs.prefill_tok_s());
      line["ttft_ms"] = median(runs.ttft_ms());
      line["ttft_ms_p90"] = quantile(runs.ttft_ms(), 0.9);
      line["runs"] = runs.runs.size();
      line["reused_tokens"] = runs.reused_tokens;
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench

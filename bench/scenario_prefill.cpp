// prefill: a prompt of P tokens and a single generated token, so TTFT is the prompt's cost.
// Each --prompt-tokens length is capped to what the context holds.
#include <algorithm>

#include "scenarios.h"
#include "summary_stats.h"
#include "timed_generation.h"

namespace parley::bench {
namespace {

// The wanted lengths capped to the context (the one generated token needs a slot too),
// without the duplicates capping makes.
std::vector<uint32_t> prompt_lengths(const std::vector<uint32_t>& wanted, uint32_t context) {
  std::vector<uint32_t> lengths;
  for (uint32_t p : wanted) {
    const uint32_t n = std::min(p, context - 1);
    if (std::find(lengths.begin(), lengths.end(), n) == lengths.end()) lengths.push_back(n);
  }
  return lengths;
}

}  // namespace

void run_prefill(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    warm_up(engine);
    for (uint32_t wanted : prompt_lengths(a.prompt_tokens, engine->context_length())) {
      const GenerationRuns runs = run_generations(engine, wanted, 1, a.repeat);
      nlohmann::ordered_json line = ctx.line("prefill", *engine);
      line["prompt_tokens"] = runs.prompt_tokens;
      line["generated_tokens"] = 1;
      line["prefill_tok_s"] = median(runs.prefill_tok_s());
      line["ttft_ms"] = median(runs.ttft_ms());
      line["ttft_ms_p90"] = quantile(runs.ttft_ms(), 0.9);
      line["runs"] = runs.runs.size();
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench

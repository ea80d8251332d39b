// decode: P prompt tokens, then G generated. Besides speed, it reports how close decode comes
// to the memory bandwidth this machine measures (DESIGN.md section 9): each step reads every
// weight and the whole K/V of the context once.
#include "decode_traffic.h"
#include "peak_rss.h"
#include "scenarios.h"
#include "summary_stats.h"
#include "timed_generation.h"

namespace parley::bench {

void run_decode(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  const double copy_gb_s = ctx.copy_bandwidth().gb_per_s;
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    if (a.prompt_tokens + a.gen_tokens > engine->context_length()) {
      ctx.write_skipped("decode", *engine, "--prompt-tokens + --gen-tokens exceed the context");
      continue;
    }
    warm_up(engine);
    const GenerationRuns runs = run_generations(engine, a.prompt_tokens, a.gen_tokens, a.repeat);
    const double tpot = median(runs.tpot_ms());
    const double tok_s = tpot > 0 ? 1000.0 / tpot : 0;
    const uint64_t weight_bytes = weight_bytes_per_token(engine->model().weights);
    const double kv_bytes = kv_bytes_read_per_token(engine->stats().kv_bytes_per_token,
                                                    runs.prompt_tokens, a.gen_tokens);
    const double used_gb_s = (double(weight_bytes) + kv_bytes) * tok_s / 1e9;

    nlohmann::ordered_json line = ctx.line("decode", *engine);
    line["prompt_tokens"] = runs.prompt_tokens;
    line["gen_tokens"] = a.gen_tokens;
    line["runs"] = runs.runs.size();
    line["ttft_ms_median"] = median(runs.ttft_ms());
    line["prefill_tok_s_median"] = median(runs.prefill_tok_s());
    line["tpot_ms_median"] = tpot;
    line["tpot_ms_p90"] = quantile(runs.tpot_ms(), 0.9);
    line["decode_tok_s"] = tok_s;
    line["weight_bytes_per_token"] = weight_bytes;
    line["kv_bytes_read_per_token"] = kv_bytes;
    line["decode_gb_s"] = used_gb_s;
    line["copy_gb_s"] = copy_gb_s;
    line["bandwidth_utilisation"] = copy_gb_s > 0 ? used_gb_s / copy_gb_s : 0;
    line["peak_rss_mb"] = peak_rss_mb();
    ctx.out().write(line);
  }
}

}  // namespace parley::bench

// decode: batch 1, with C tokens already in the cache (--context), then G generated
// (--tokens). Besides speed, it reports how close decode comes to the memory bandwidth this
// machine measures (bench/RESULTS.md, "How figures are taken"): each step reads every weight
// and the whole K/V of the context once. On the CPU the copy loop also runs right before and
// after each line's timings (decode_adjacent_utilisation uses their mean).
#include <optional>

#include "decode_timing_fields.h"
#include "decode_traffic.h"
#include "scenarios.h"
#include "summary_stats.h"
#include "timed_generation.h"

namespace parley::bench {

void run_decode(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  const double copy_gb_s = ctx.copy_bandwidth().gb_per_s;
  const double read_gb_s = ctx.copy_bandwidth().read_gb_per_s;
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    if (a.gen_tokens + 1 > engine->context_length()) {
      ctx.write_skipped("decode", *engine, "--tokens leaves no room for a context");
      continue;
    }
    warm_up(engine);
    const uint64_t weight_bytes = weight_bytes_per_token(engine->model().weights);
    // Capped, like prefill's prompts, so that the G tokens fit after it.
    const uint32_t cap = engine->context_length() - a.gen_tokens;
    for (const std::string& prompt : distinct_prompts(engine->tokenizer(), a.context_tokens, cap)) {
      // The copy loop again on either side of the timings: a ratio to a bandwidth measured
      // minutes earlier says little where memory speed wanders (a virtual machine's does).
      const std::optional<CopyBandwidth> before = ctx.copy_bandwidth_now();
      const GenerationRuns runs = run_generations(engine, prompt, a.gen_tokens, a.repeat);
      const std::optional<CopyBandwidth> after = ctx.copy_bandwidth_now();
      const double kv_bytes = kv_bytes_read_per_token(engine->stats().kv_bytes_per_token,
                                                      runs.context_tokens, a.gen_tokens);

      nlohmann::ordered_json line = ctx.line("decode", *engine);
      line["prompt_tokens"] = runs.prompt_tokens;
      line["context_tokens"] = runs.context_tokens;
      line["generated_tokens"] = a.gen_tokens;
      line["prefill_tok_s"] = median(runs.prefill_tok_s());
      line["ttft_ms"] = median(runs.ttft_ms());
      const double tok_s = put_decode_timings(line, runs.tpot_ms());
      const double used_gb_s = (double(weight_bytes) + kv_bytes) * tok_s / 1e9;
      if (copy_gb_s > 0 && tok_s > 0) {
        line["decode_bandwidth_utilisation"] = used_gb_s / copy_gb_s;
      }
      if (read_gb_s > 0 && tok_s > 0) line["decode_read_utilisation"] = used_gb_s / read_gb_s;
      line["bandwidth_before_gbs"] = nullptr;
      line["bandwidth_after_gbs"] = nullptr;
      line["decode_adjacent_utilisation"] = nullptr;
      if (before && after) {
        line["bandwidth_before_gbs"] = before->gb_per_s;
        line["bandwidth_after_gbs"] = after->gb_per_s;
        const double adjacent = (before->gb_per_s + after->gb_per_s) / 2;
        if (adjacent > 0 && tok_s > 0) line["decode_adjacent_utilisation"] = used_gb_s / adjacent;
      }
      line["runs"] = runs.runs.size();
      line["reused_tokens"] = runs.reused_tokens;
      line["weight_bytes_per_token"] = weight_bytes;
      line["kv_bytes_read_per_token"] = kv_bytes;
      line["decode_gbs"] = used_gb_s;
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench

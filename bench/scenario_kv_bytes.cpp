// kv-bytes: what one token of context costs in each KV type, and the size of a block.
#include "scenarios.h"

namespace parley::bench {

void run_kv_bytes(BenchContext& ctx) {
  for (kv::KvType kv : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv);
    const engine::EngineStats stats = engine->stats();
    nlohmann::ordered_json line = ctx.line("kv-bytes", *engine);
    line["kv_bytes_per_token"] = stats.kv_bytes_per_token;
    line["block_tokens"] = kv::kBlockTokens;
    line["block_bytes"] = engine->kv_pool().layout().block_bytes();
    line["context_tokens"] = engine->context_length();
    line["context_kv_bytes"] = stats.kv_bytes_per_token * engine->context_length();
    line["kv_budget_bytes"] = stats.kv_budget_bytes;
    ctx.write(line);
  }
}

}  // namespace parley::bench

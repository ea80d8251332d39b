// spill: what a conversation costs in the store and how fast it comes back. A conversation
// of N tokens is spilled (encode + one SQLite transaction), the engine is closed, a new one
// opens the file and the next turn restores the KV from disk. The alternative the store
// saves is the re-prefill of all N tokens, timed on a fresh session of its own scope.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "engine/clock.h"
#include "prompt_text.h"
#include "scenarios.h"

namespace parley::bench {
namespace {

// A private directory for the store file, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "parley-bench-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("cannot create a scratch directory");
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const char* name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// N tokens in all for each wanted N, leaving room in the context for the turn that restores
// them; capping can make two lengths one.
std::vector<uint32_t> conversation_lengths(const std::vector<uint32_t>& wanted, uint32_t context) {
  std::vector<uint32_t> lengths;
  for (uint32_t w : wanted) {
    const uint32_t n = std::min<uint32_t>(w, context - 8);
    if (std::find(lengths.begin(), lengths.end(), n) == lengths.end()) lengths.push_back(n);
  }
  return lengths;
}

}  // namespace

void run_spill(BenchContext& ctx) {
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    const uint32_t context = ctx.make_engine(kv)->context_length();
    for (uint32_t n : conversation_lengths(ctx.args().spill_tokens, context)) {
      std::string prompt;
      engine::TurnStats prefill_stats;
      {  // one engine at a time: each holds the weights
        auto probe = ctx.make_engine(kv);
        prompt = text_of_tokens(probe->tokenizer(), n - 1);
        warm_up(probe);

        // Re-prefill: what the store saves.
        engine::SessionOptions fresh;
        fresh.chat_template = text::TemplateKind::raw;
        fresh.cache_scope = "re-prefill";
        engine::Session recompute(probe, fresh);
        recompute.send(prompt, fixed_length_params(1), nullptr, prefill_stats);
      }

      ScratchDir dir;
      const std::string db = dir.file("sessions.db");
      double spill_ms = 0;
      uint64_t stored_bytes = 0;
      size_t tokens = 0;
      {
        auto engine = ctx.make_engine(kv, db);
        engine::SessionOptions options;
        options.id = "spilled";
        options.chat_template = text::TemplateKind::raw;
        engine::Session session(engine, options);
        engine::TurnStats stats;
        session.send(prompt, fixed_length_params(1), nullptr, stats);
        const double t0 = engine::now_ms();
        session.spill();
        spill_ms = engine::now_ms() - t0;
        stored_bytes = session.kv_bytes_stored();
        tokens = session.tokens().size();
      }
      auto engine = ctx.make_engine(kv, db);  // a restart: nothing is resident
      auto session = engine::Session::open(engine, "spilled");
      engine::TurnStats restore_stats;
      session->send("The", fixed_length_params(1), nullptr, restore_stats);

      nlohmann::ordered_json line = ctx.line("spill", *engine);
      line["context_tokens"] = tokens - 1;  // the last token awaits its K/V: not stored
      line["tokens"] = tokens;
      line["spill_ms"] = spill_ms;
      line["restore_ms"] = restore_stats.restore_ms;
      line["reprefill_ms"] = prefill_stats.ttft_ms;
      line["stored_bytes_per_token"] = double(stored_bytes) / double(tokens - 1);
      line["kv_source"] = restore_stats.kv_source == engine::KvSource::restored ? "restored" : "other";
      line["restore_over_reprefill"] = restore_stats.restore_ms / prefill_stats.ttft_ms;
      line["restore_turn_ttft_ms"] = restore_stats.ttft_ms;
      line["stored_bytes"] = stored_bytes;
      line["f16_kv_bytes_per_token"] =
          kv::kv_bytes_per_token(kv::KvType::f16, engine->kv_shape());
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench

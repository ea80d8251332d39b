// Session::prepare — the work a next turn would begin with, done ahead of it (while a level
// loads, on a thread of the caller's choosing): spilled KV comes back from the store, tokens
// without KV are computed, and a conversation not yet begun computes its opening.
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

void Session::prepare(TurnStats& stats) {
  stats = TurnStats{};
  stats.kv_source = kv_held();
  last_used_ms_ = now_ms();
  if (spilled()) {
    const double t0 = now_ms();
    stats.kv_source = restore_kv() ? KvSource::restored : KvSource::rebuilt;
    stats.restore_ms = now_ms() - t0;
  }
  if (tokens_.empty()) {
    prepare_opening(stats);
    return;
  }
  // The last token stays for the next turn, which computes it with its own ids: its logits
  // start that turn's reply.
  const uint32_t end = uint32_t(tokens_.size()) - 1;
  const uint32_t cached_before = n_cached_;
  if (n_cached_ < end) {
    try {
      stats.reused_tokens = cached_before + prefill(end);
    } catch (...) {
      truncate_kv(n_cached_);  // blocks taken past what was computed
      throw;
    }
    stats.computed_tokens = n_cached_ - stats.reused_tokens;
  } else {
    stats.reused_tokens = n_cached_;
  }
  last_used_ms_ = now_ms();
  if (n_cached_ < end) {
    fail(Status::cancelled, "preparing was stopped after " +
                                std::to_string(stats.computed_tokens) + " of " +
                                std::to_string(end - cached_before) +
                                " tokens; they are kept, and the next turn computes the rest");
  }
}

void Session::prepare_opening(TurnStats& stats) {
  // An opening the context cannot hold is no turn's beginning: nothing to compute ahead.
  require_opening_fits("");
  // Only full blocks: they are what the first turn can take from the prefix cache (a partial
  // block is computed with the message that fills it).
  const std::vector<int32_t> ids = template_.render_system(system_prompt_);
  const uint32_t end = uint32_t(ids.size() / kv::kBlockTokens * kv::kBlockTokens);
  if (end == 0) return;
  if (!opening_) {
    opening_.emplace(Opening{
        kv::BlockTable(engine_->kv_pool(), engine_->prefix_root(cache_scope_)), 0});
  }
  auto& table = opening_->blocks;
  const uint32_t there = table.reuse_published(ids, opening_->n_tokens, end);
  opening_->n_tokens = there;
  uint32_t done = there;
  try {
    std::vector<float> logits;  // of no use: the first turn computes its own
    done = compute(table, ids, there, end, logits);
  } catch (...) {
    table.truncate(there);
    if (there == 0) opening_.reset();
    throw;
  }
  table.truncate(done);
  table.publish_full(ids, done);
  opening_->n_tokens = done;
  if (done == 0) opening_.reset();
  stats.reused_tokens = there;
  stats.computed_tokens = done - there;
  last_used_ms_ = now_ms();
  if (done < end) {
    fail(Status::cancelled, "preparing was stopped after " + std::to_string(done - there) +
                                " of the opening's " + std::to_string(end - there) +
                                " tokens; they are kept, and the first turn computes the rest");
  }
}

}  // namespace parley::engine

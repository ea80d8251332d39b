// Session::spill — the KV goes to the store and its memory is freed: full blocks as
// content-addressed prefix blocks (stored once for every session that has them), the partially
// filled last block as the session's own blob, with the chained hash of its tokens. A stored
// block that restore found damaged is written again. The blocks are released only after the
// store's transaction has committed. Messages the store does not have yet are committed first.
#include <algorithm>
#include <exception>
#include <vector>

#include "common/error.h"
#include "common/parallel_tasks.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "store/kv_codec.h"
#include "store/store.h"

namespace parley::engine {

bool Session::spill() {
  auto* store = engine_->store();
  if (!store || unstored_) return false;  // (not stored yet: its KV has no row to go with)
  // A turn the store refused before goes first: its transcript must not be left behind in
  // memory once nothing resident holds the session any more (a closed engine, a reopen).
  commit_messages();
  // A prepared opening is recomputable and stays in the prefix cache until evicted: let go.
  opening_.reset();
  if (spilled() || n_cached_ == 0) return false;
  auto& pool = blocks_.pool();
  const auto& layout = pool.layout();
  const uint64_t fingerprint = engine_->model().fingerprint;

  blocks_.publish_full(tokens_, n_cached_);  // every full block gets its chained hash
  const auto hashes = blocks_.full_block_hashes();
  // The conversation's last token is recomputed by the next turn anyway (its logits start
  // the reply), so its K/V is not stored: a reply stopped by interrupt() has it in the cache,
  // and a stored row that resume cannot use would make it recompute the whole tail block.
  const uint32_t n_stored = std::min<uint32_t>(n_cached_, uint32_t(tokens_.size()) - 1);
  const uint32_t n_full = n_stored / kv::kBlockTokens;
  store::StoredKv kv;
  kv.model_fingerprint = fingerprint;
  kv.kv_type = int32_t(layout.type());
  kv.n_tokens = n_stored;
  kv.full_block_hashes.assign(hashes.begin(), hashes.begin() + n_full);
  // Blocks the store has (another session's, the same prefix) are not encoded again, unless
  // the stored blob was found damaged: the recomputed one replaces it.
  const auto encode_blocks = [&](bool all) {
    std::vector<store::PrefixBlob> blobs;
    std::vector<const std::byte*> sources;  // read here (a device may sync them)
    for (uint32_t b = 0; b < n_full; ++b) {
      const bool damaged = std::ranges::find(damaged_blocks_, hashes[b]) != damaged_blocks_.end();
      if (!all && !damaged && store->has_prefix_block(hashes[b])) continue;
      blobs.push_back({hashes[b], {}, damaged});
      sources.push_back(pool.read(blocks_.ids()[b]));
    }
    // Encoding is most of a spill: the blocks are encoded on the engine's threads at once.
    const auto errors = run_tasks(blobs.size(), engine_->worker_threads(), [&](size_t i) {
      blobs[i].blob = store::encode_kv_block(layout, fingerprint, sources[i], kv::kBlockTokens);
    });
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    return blobs;
  };
  if (const uint32_t tail = n_stored % kv::kBlockTokens) {
    kv.tail_blob =
        store::encode_kv_block(layout, fingerprint, pool.read(blocks_.ids()[n_full]), tail);
    // What the tail was computed for: another engine's copy of the conversation may have
    // other tokens there (and the same full blocks), and must not take it.
    kv.tail_hash = blocks_.partial_hash(tokens_, n_stored);
  }
  // A block found stored may be gone by the write: the last other session that had it was
  // deleted or rewound meanwhile. Then every block goes with the write.
  for (bool all : {false, true}) {
    const auto new_blobs = encode_blocks(all);
    bool saved = true;
    write_own_rows([&] {
      try {
        store->save_kv(id_, kv, new_blobs, uint32_t(n_stored_), revision_);
      } catch (const store::PrefixBlockMissing&) {
        if (all) throw;
        saved = false;
      }
    });
    if (saved) break;
  }
  // Those not in this spill are beyond what was recomputed: the next restore finds them again.
  damaged_blocks_.clear();

  truncate_kv(0);  // published blocks stay findable in the prefix cache until evicted
  spilled_ = true;
  return true;
}

}  // namespace parley::engine

// Session::restore_kv — a spilled session's KV comes back: full blocks still resident in the
// prefix cache are taken from there, the others are read from the store, verified (checksum,
// model, KV format, and the chained hash against the conversation's own tokens) and decoded.
// Whatever is missing or wrong is left to prefill: it recomputes from the first position that
// did not come back, so nothing is ever lost, only slower.
#include "common/error.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "store/kv_codec.h"

namespace parley::engine {

bool Session::restore_kv() {
  spilled_ = false;
  auto* store = engine_->store();
  if (!store || tokens_.empty()) return false;
  std::optional<store::StoredKv> kv;
  try {
    kv = store->load_kv(id_);
  } catch (const Error& e) {
    log::warn_line("session '" + id_ + "': stored KV unreadable, recomputing it: " + e.what());
  }
  const auto& layout = blocks_.pool().layout();
  const uint64_t fingerprint = engine_->model().fingerprint;
  if (!kv || kv->model_fingerprint != fingerprint || kv->kv_type != int32_t(layout.type())) {
    return false;
  }
  // The last token of the conversation always stays for prefill: its logits start the reply.
  const uint32_t usable = std::min<uint32_t>(kv->n_tokens, uint32_t(tokens_.size()) - 1);

  n_cached_ = blocks_.reuse_published(tokens_, 0, usable);
  for (size_t b = n_cached_ / kv::kBlockTokens;
       b < kv->full_block_hashes.size() && (b + 1) * kv::kBlockTokens <= usable; ++b) {
    const uint64_t hash = kv::block_hash(blocks_.key_of(tokens_, b));
    if (hash != kv->full_block_hashes[b]) break;  // stored for other tokens
    try {
      const auto blob = store->load_prefix_block(hash);
      if (!blob) break;
      prepare_write(n_cached_, n_cached_ + kv::kBlockTokens);
      const auto info = store::decode_kv_block(*blob, layout, fingerprint,
                                               blocks_.pool().data(blocks_.ids()[b]));
      // A shorter blob (a tail's, in the wrong row) is valid alone but leaves slots unset.
      require(info.n_tokens == kv::kBlockTokens, Status::corrupt,
              "KV blob holds " + std::to_string(info.n_tokens) + " tokens where a full block of " +
                  std::to_string(kv::kBlockTokens) + " belongs");
    } catch (const Error& e) {
      if (e.status() != Status::corrupt && e.status() != Status::model_mismatch &&
          e.status() != Status::storage) {
        throw;
      }
      log::warn_line("session '" + id_ + "': KV block " + std::to_string(b) + " recomputed: " + e.what());
      blocks_.truncate(n_cached_);
      break;
    }
    n_cached_ += kv::kBlockTokens;
    blocks_.publish_full(tokens_, n_cached_);
  }

  const uint32_t tail = kv->n_tokens % kv::kBlockTokens;
  const bool tail_fits = kv->n_tokens <= usable;
  if (n_cached_ + tail == kv->n_tokens && tail > 0 && tail_fits && !kv->tail_blob.empty()) {
    try {
      prepare_write(n_cached_, n_cached_ + tail);
      const auto info = store::decode_kv_block(kv->tail_blob, layout, fingerprint,
                                               blocks_.pool().data(blocks_.ids().back()));
      if (info.n_tokens == tail) n_cached_ += tail;
    } catch (const Error& e) {
      if (e.status() != Status::corrupt && e.status() != Status::model_mismatch) throw;
      log::warn_line("session '" + id_ + "': KV tail recomputed: " + e.what());
    }
    blocks_.truncate(n_cached_);
  }
  return n_cached_ == kv->n_tokens && n_cached_ > 0;
}

}  // namespace parley::engine

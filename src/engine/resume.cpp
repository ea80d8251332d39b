// Session::restore_kv — a spilled session's KV comes back: full blocks still resident in the
// prefix cache are taken from there, the others are read from the store, verified (checksum,
// model, KV format, and the chained hash against the conversation's own tokens) and decoded;
// so is the partially filled last block, by the chained hash of its tokens.
// Whatever is missing or wrong is left to prefill: it recomputes from the first position that
// did not come back, so nothing is ever lost, only slower. A stored block found damaged is
// written again by the next spill (spill.cpp), for every session that shares it.
#include <algorithm>
#include <exception>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel_tasks.h"
#include "common/shown_id.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "kv/prefix_index.h"
#include "store/kv_codec.h"

namespace parley::engine {

namespace {

// Full blocks come back this many at a time: read in order, then decoded side by side.
constexpr size_t kRestoreBatch = 64;

// Errors that cost a recomputation, not the send.
bool recomputable(const Error& e) {
  return e.status() == Status::corrupt || e.status() == Status::model_mismatch ||
         e.status() == Status::storage;
}

// A prefix block's hash chain starts from the model, the KV type and the scope: a blob under
// this engine's hash that fails its checks (checksum, decode) or claims another model, KV
// type or shape is damaged. A store that could not be read, or memory that ran out, is not.
bool damaged(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.status() == Status::corrupt || e.status() == Status::model_mismatch;
  } catch (...) {
    return false;
  }
}

}  // namespace

bool Session::read_block_blobs(store::Store& store, const store::StoredKv& kv, size_t first,
                               size_t end, std::vector<std::vector<std::byte>>& blobs) {
  for (size_t b = first; b < end; ++b) {
    // Blocks past `first` are not in the table yet: each chains on the stored hash before it,
    // which the previous pass found equal to the conversation's.
    const kv::BlockKey key =
        b == first ? blocks_.key_of(tokens_, b)
                   : kv::make_block_key(kv.full_block_hashes[b - 1],
                                        std::span<const int32_t>(tokens_).subspan(
                                            b * kv::kBlockTokens, kv::kBlockTokens));
    const uint64_t hash = kv::block_hash(key);
    if (hash != kv.full_block_hashes[b]) return false;  // stored for other tokens
    try {
      auto blob = store.load_prefix_block(hash);
      if (!blob) return false;
      blobs.push_back(std::move(*blob));
    } catch (const Error& e) {
      if (!recomputable(e)) throw;
      log::warn_line("session " + shown_id(id_) + ": KV block " + std::to_string(b) +
                     " recomputed: " + e.what());
      return false;
    }
  }
  return true;
}

bool Session::decode_block_blobs(const store::StoredKv& kv,
                                 const std::vector<std::vector<std::byte>>& blobs) {
  const auto& layout = blocks_.pool().layout();
  const uint64_t fingerprint = engine_->model().fingerprint;
  const size_t first = n_cached_ / kv::kBlockTokens;
  prepare_write(n_cached_, n_cached_ + uint32_t(blobs.size()) * kv::kBlockTokens);
  std::vector<std::byte*> targets;
  for (size_t i = 0; i < blobs.size(); ++i) {
    targets.push_back(blocks_.pool().data(blocks_.ids()[first + i]));
  }
  // Decoding is most of a restore (zstd decodes about 1 GB/s per core): the blocks are
  // decoded on the engine's threads at once, then taken in order up to the first bad one.
  const auto errors = run_tasks(blobs.size(), engine_->worker_threads(), [&](size_t i) {
    const auto info = store::decode_kv_block(blobs[i], layout, fingerprint, targets[i]);
    // A shorter blob (a tail's, in the wrong row) is valid alone but leaves slots unset.
    require(info.n_tokens == kv::kBlockTokens, Status::corrupt, [&] {
      return "KV blob holds " + std::to_string(info.n_tokens) + " tokens where a full block of " +
             std::to_string(kv::kBlockTokens) + " belongs";
    });
  });
  // Every damaged blob of the batch, not only the first: the next spill rewrites them all.
  for (size_t i = 0; i < blobs.size(); ++i) {
    if (!errors[i] || !damaged(errors[i])) continue;
    const uint64_t hash = kv.full_block_hashes[first + i];
    if (std::ranges::find(damaged_blocks_, hash) == damaged_blocks_.end()) {
      damaged_blocks_.push_back(hash);
    }
  }
  for (size_t i = 0; i < blobs.size(); ++i) {
    if (errors[i]) {
      blocks_.truncate(n_cached_);
      try {
        std::rethrow_exception(errors[i]);
      } catch (const Error& e) {
        if (!recomputable(e)) throw;
        log::warn_line("session " + shown_id(id_) + ": KV block " + std::to_string(first + i) +
                       " recomputed: " + e.what() +
                       (damaged(errors[i]) ? " (damaged: the next spill stores it again)" : ""));
      }
      return false;
    }
    n_cached_ += kv::kBlockTokens;
    blocks_.publish_full(tokens_, n_cached_);
  }
  return true;
}

bool Session::tail_restorable(const store::StoredKv& kv) const {
  const uint32_t tail = kv.n_tokens % kv::kBlockTokens;
  if (tail == 0 || kv.tail_blob.empty() || n_cached_ + tail != kv.n_tokens) return false;
  // The last token of the conversation always stays for prefill: its logits start the reply.
  if (kv.n_tokens >= tokens_.size()) return false;
  // The full blocks before it are this conversation's, but the tail may have been computed
  // for other tokens after them (another engine's copy of the conversation, rewound and
  // continued otherwise): only a tail stored for these tokens is taken. Without a hash (a row
  // older code wrote) it is not known, so it is recomputed.
  return kv.tail_hash && *kv.tail_hash == blocks_.partial_hash(tokens_, kv.n_tokens);
}

bool Session::restore_kv() {
  spilled_ = false;
  auto* store = engine_->store();
  if (!store || tokens_.empty()) return false;
  std::optional<store::StoredKv> kv;
  try {
    kv = store->load_kv(id_);
  } catch (const Error& e) {
    log::warn_line("session " + shown_id(id_) +
                   ": stored KV unreadable, recomputing it: " + e.what());
  }
  const auto& layout = blocks_.pool().layout();
  const uint64_t fingerprint = engine_->model().fingerprint;
  if (!kv || kv->model_fingerprint != fingerprint || kv->kv_type != int32_t(layout.type())) {
    return false;
  }
  // The last token of the conversation always stays for prefill: its logits start the reply.
  const uint32_t usable = std::min<uint32_t>(kv->n_tokens, uint32_t(tokens_.size()) - 1);

  n_cached_ = blocks_.reuse_published(tokens_, 0, usable);
  const size_t end_block =
      std::min<size_t>(kv->full_block_hashes.size(), usable / kv::kBlockTokens);
  bool intact = true;
  while (intact && n_cached_ / kv::kBlockTokens < end_block) {
    const size_t first = n_cached_ / kv::kBlockTokens;
    std::vector<std::vector<std::byte>> blobs;
    intact = read_block_blobs(*store, *kv, first, std::min(end_block, first + kRestoreBatch),
                              blobs);
    if (blobs.empty()) break;
    intact = decode_block_blobs(*kv, blobs) && intact;
  }

  if (tail_restorable(*kv)) {
    const uint32_t tail = kv->n_tokens % kv::kBlockTokens;
    try {
      prepare_write(n_cached_, n_cached_ + tail);
      const auto info = store::decode_kv_block(kv->tail_blob, layout, fingerprint,
                                               blocks_.pool().data(blocks_.ids().back()));
      if (info.n_tokens == tail) n_cached_ += tail;
    } catch (const Error& e) {
      if (e.status() != Status::corrupt && e.status() != Status::model_mismatch) throw;
      log::warn_line("session " + shown_id(id_) + ": KV tail recomputed: " + e.what());
    }
    blocks_.truncate(n_cached_);
  }
  return n_cached_ == kv->n_tokens && n_cached_ > 0;
}

}  // namespace parley::engine

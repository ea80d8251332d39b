#include "kv/block_table.h"

#include <cstring>

#include "common/error.h"

namespace parley::kv {
namespace {

uint32_t blocks_for(uint32_t positions) { return (positions + kBlockTokens - 1) / kBlockTokens; }

// A new block holding `source`'s bytes. The source is read before the allocation: a read that
// brings it back from a device can throw, and a block taken by then would be lost.
BlockId copy_of(BlockPool& pool, BlockId source) {
  const std::byte* bytes = pool.read(source);  // stays put: the source is referenced
  const BlockId copy = pool.allocate();
  std::memcpy(pool.data(copy), bytes, pool.layout().block_bytes());
  return copy;
}

}  // namespace

BlockTable::BlockTable(BlockPool& pool, uint64_t prefix_root) : pool_(&pool), root_(prefix_root) {}

BlockTable::BlockTable(BlockTable&& other) noexcept
    : pool_(other.pool_), root_(other.root_), ids_(std::move(other.ids_)),
      hashes_(std::move(other.hashes_)) {
  other.ids_.clear();
  other.hashes_.clear();
}

BlockTable::~BlockTable() {
  for (BlockId id : ids_) pool_->release(id);
}

BlockTable BlockTable::fork(uint32_t n_filled) const {
  BlockTable copy(*pool_, root_);
  const uint32_t full = n_filled / kBlockTokens;
  const uint32_t used = blocks_for(n_filled);
  require(used <= ids_.size(), Status::internal, "fork past the table's blocks");
  if (used > full) {  // the partial block is copied first: it is the only allocation
    const BlockId partial = copy_of(*pool_, ids_[full]);
    for (uint32_t b = 0; b < full; ++b) {
      pool_->retain(ids_[b]);
      copy.ids_.push_back(ids_[b]);
    }
    copy.ids_.push_back(partial);
  } else {
    for (uint32_t b = 0; b < full; ++b) {
      pool_->retain(ids_[b]);
      copy.ids_.push_back(ids_[b]);
    }
  }
  copy.hashes_.assign(hashes_.begin(), hashes_.begin() + std::min<size_t>(hashes_.size(), full));
  return copy;
}

uint32_t BlockTable::reuse_published(std::span<const int32_t> tokens, uint32_t n_filled,
                                     uint32_t limit) {
  while (n_filled % kBlockTokens == 0 && n_filled + kBlockTokens <= limit &&
         n_filled + kBlockTokens <= tokens.size()) {
    const size_t b = n_filled / kBlockTokens;
    if (b != ids_.size() || b != hashes_.size()) break;  // only extends a table of full blocks
    const BlockKey key = make_block_key(parent_hash(b), tokens.subspan(n_filled, kBlockTokens));
    const auto hit = pool_->acquire_published(key);
    if (!hit) break;
    ids_.push_back(*hit);
    hashes_.push_back(block_hash(key));
    n_filled += kBlockTokens;
  }
  return n_filled;
}

void BlockTable::prepare_write(uint32_t from, uint32_t to) {
  if (from >= to) return;
  const size_t first = from / kBlockTokens;
  if (first < ids_.size()) {
    const BlockId id = ids_[first];
    if (pool_->ref_count(id) > 1 || pool_->is_published(id)) {
      const BlockId copy = copy_of(*pool_, id);
      pool_->release(id);
      ids_[first] = copy;
      hashes_.resize(std::min(hashes_.size(), first));
    }
  }
  while (ids_.size() < blocks_for(to)) ids_.push_back(pool_->allocate());
}

size_t BlockTable::blocks_to_write(uint32_t from, uint32_t to) const {
  if (from >= to) return 0;
  const size_t first = from / kBlockTokens;
  const bool copies = first < ids_.size() &&
                      (pool_->ref_count(ids_[first]) > 1 || pool_->is_published(ids_[first]));
  const size_t wanted = blocks_for(to);
  return (wanted > ids_.size() ? wanted - ids_.size() : 0) + (copies ? 1 : 0);
}

void BlockTable::publish_full(std::span<const int32_t> tokens, uint32_t n_filled) {
  const size_t full = std::min<size_t>(n_filled / kBlockTokens, ids_.size());
  for (size_t b = hashes_.size(); b < full; ++b) {
    const BlockKey key = make_block_key(parent_hash(b), tokens.subspan(b * kBlockTokens, kBlockTokens));
    pool_->publish(ids_[b], key);
    hashes_.push_back(block_hash(key));
  }
}

uint64_t BlockTable::partial_hash(std::span<const int32_t> tokens, uint32_t n_filled) const {
  const size_t b = n_filled / kBlockTokens;
  require(b <= hashes_.size() && n_filled <= tokens.size(), Status::internal,
          "the hash of a partial block needs the hashes of the full blocks before it");
  return partial_block_hash(parent_hash(b),
                            tokens.subspan(b * kBlockTokens, n_filled - b * kBlockTokens));
}

void BlockTable::truncate(uint32_t n_filled) {
  hashes_.resize(std::min<size_t>(hashes_.size(), n_filled / kBlockTokens));
  const size_t keep = blocks_for(n_filled);
  while (ids_.size() > keep) {
    pool_->release(ids_.back());
    ids_.pop_back();
  }
}

std::byte* BlockTable::append_block() {
  const BlockId id = pool_->allocate();
  ids_.push_back(id);
  return pool_->data(id);
}

}  // namespace parley::kv

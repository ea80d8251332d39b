// One sequence's blocks: which pool block holds positions [16b, 16b + 16), and the chained
// hash of every full block, so full blocks can be published for other sequences and found
// again. Positions [0, n_filled) hold K/V; the caller tracks n_filled.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_view.h"

namespace parley::kv {

class BlockTable {
 public:
  // prefix_root: see prefix_root(); it scopes which published blocks this table may reuse.
  BlockTable(BlockPool& pool, uint64_t prefix_root);
  ~BlockTable();  // releases every block
  BlockTable(BlockTable&& other) noexcept;
  BlockTable& operator=(BlockTable&&) = delete;
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  // A table with the same contents for positions [0, n_filled): full blocks are shared, the
  // partially filled last block is copied. Throws Error(out_of_memory) (nothing is taken).
  BlockTable fork(uint32_t n_filled) const;

  // While n_filled sits on a block boundary and tokens[n_filled, n_filled + 16) lie below
  // `limit`, takes the block published for exactly that prefix. Returns the new n_filled.
  uint32_t reuse_published(std::span<const int32_t> tokens, uint32_t n_filled, uint32_t limit);

  // Makes positions [from, to) writable: allocates the blocks they need, and copies the block
  // `from` falls in when it is shared or published (published blocks never change). Throws
  // Error(out_of_memory); blocks taken before the throw stay in the table.
  void prepare_write(uint32_t from, uint32_t to);
  // How many blocks prepare_write(from, to) would take from the pool now.
  size_t blocks_to_write(uint32_t from, uint32_t to) const;
  size_t n_blocks() const { return ids_.size(); }

  // Publishes the blocks that tokens[0, n_filled) fill completely and that are not yet.
  void publish_full(std::span<const int32_t> tokens, uint32_t n_filled);

  // Forgets positions from n_filled on, releasing the blocks past them.
  void truncate(uint32_t n_filled);

  // Appends a fresh block (for K/V restored from elsewhere) and returns its bytes.
  // Throws Error(out_of_memory).
  std::byte* append_block();

  // Chained hashes of the full blocks that have one (every full block after publish_full).
  std::span<const uint64_t> full_block_hashes() const { return hashes_; }
  // The key block b has (or would have) for these tokens.
  BlockKey key_of(std::span<const int32_t> tokens, size_t block) const {
    return make_block_key(parent_hash(block), tokens.subspan(block * kBlockTokens, kBlockTokens));
  }
  // The chained hash (partial_block_hash) of the partially filled block tokens[16b, n_filled),
  // b = n_filled / 16; the full blocks before it must have their hashes.
  uint64_t partial_hash(std::span<const int32_t> tokens, uint32_t n_filled) const;
  BlockPool& pool() const { return *pool_; }

  KvView view(uint32_t capacity) { return KvView(*pool_, ids_, capacity); }
  const std::vector<BlockId>& ids() const { return ids_; }
  uint64_t bytes() const { return uint64_t(ids_.size()) * pool_->layout().block_bytes(); }

 private:
  uint64_t parent_hash(size_t block) const { return block == 0 ? root_ : hashes_[block - 1]; }

  BlockPool* pool_;
  uint64_t root_;
  std::vector<BlockId> ids_;
  std::vector<uint64_t> hashes_;  // chained hashes of full blocks 0 .. hashes_.size() - 1
};

}  // namespace parley::kv

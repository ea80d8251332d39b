// One sequence's K/V as a backend sees it: positions mapped through the sequence's block table
// into the pool. K/V are quantized into the cache when written and dequantized when read, so
// attention always reads what the cache holds, however the tokens were split into calls.
#pragma once

#include <cstdint>
#include <span>

#include "kv/block_pool.h"

namespace parley::kv {

class KvView {
 public:
  // blocks: the sequence's block table; position p lives in blocks[p / 16], slot p % 16.
  // Blocks written through this view must be held by the sequence alone (the engine copies
  // shared blocks before writing).
  // capacity: the positions the sequence may use (at most 16 per block).
  KvView(BlockPool& pool, std::span<const BlockId> blocks, uint32_t capacity)
      : pool_(&pool), blocks_(blocks), capacity_(capacity) {}

  const BlockLayout& layout() const { return pool_->layout(); }
  const KvShape& shape() const { return pool_->layout().shape(); }
  KvType type() const { return pool_->layout().type(); }
  uint32_t capacity() const { return capacity_; }

  // Stores one token's K and V rows ([n_kv_heads * head_dim] floats each) of one layer.
  void write(int32_t layer, uint32_t pos, const float* k, const float* v);

  // One head of one stored token, dequantized: out[head_dim].
  void read_k(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const;
  void read_v(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const;

  // The stored bytes of the block holding pos, laid out as layout() says: for attention
  // kernels that read INT8/F16/F32 values in place instead of dequantizing row by row.
  const std::byte* block_data(uint32_t pos) const { return block(pos); }

  // The pool and the block table, for a backend that mirrors blocks in its own memory.
  BlockPool& pool() const { return *pool_; }
  std::span<const BlockId> block_ids() const { return blocks_; }

 private:
  const std::byte* block(uint32_t pos) const { return pool_->data(blocks_[pos / kBlockTokens]); }
  std::byte* block(uint32_t pos) { return pool_->data(blocks_[pos / kBlockTokens]); }

  BlockPool* pool_;
  std::span<const BlockId> blocks_;
  uint32_t capacity_;
};

}  // namespace parley::kv

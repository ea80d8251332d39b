// The paged KV memory: blocks of kBlockTokens tokens x all layers, reference-counted, within a
// byte budget. A block that is full and published in the prefix index is immutable; when its
// last user lets go it stays cached (least recently used first out) until the budget needs
// its memory. Bookkeeping is thread-safe; a block's bytes belong to whoever holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kv/block_layout.h"
#include "kv/prefix_index.h"

namespace parley::kv {

// Brings a block's bytes back from a device whose copy is newer (a backend that keeps the
// rows it writes on the device until the host needs them).
class HostSync {
 public:
  virtual ~HostSync() = default;
  // Writes the device's copy of block `id` (allocation `stamp`, a block of `layout`) into
  // `bytes`. Throws Error.
  virtual void bring_to_host(BlockId id, uint64_t stamp, const BlockLayout& layout, std::byte* bytes) = 0;
};

struct PoolStats {
  uint64_t total = 0;      // blocks the budget allows
  uint64_t allocated = 0;  // blocks that have memory now
  uint64_t used = 0;       // referenced by at least one sequence
  uint64_t shared = 0;     // referenced by two or more
  uint64_t cached = 0;     // unreferenced but kept for the prefix index
  uint64_t prefix_hits = 0;
  uint64_t prefix_misses = 0;
};

class BlockPool {
 public:
  BlockPool(const BlockLayout& layout, uint64_t budget_bytes);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  const BlockLayout& layout() const { return layout_; }
  uint64_t budget_bytes() const { return budget_bytes_; }
  uint64_t capacity_blocks() const { return capacity_; }  // blocks the budget allows
  // "the KV budget of N bytes (B blocks of S bytes)", for the messages that say it ran out.
  std::string budget_words() const;

  // The block's memory, as it is: writers, and backends that keep it current themselves.
  std::byte* data(BlockId id) { return blocks_[size_t(id)].get(); }
  const std::byte* data(BlockId id) const { return blocks_[size_t(id)].get(); }
  // The block's current bytes, for anyone who reads them on the host (spill, copy-on-write):
  // brought back first when a device holds a newer copy. Throws what HostSync throws.
  const std::byte* read(BlockId id);

  // The backend whose device may hold newer copies. Held weakly: once it is gone, read() of a
  // block still marked device-newer fails with Error(internal) instead of reaching it.
  void set_host_sync(std::weak_ptr<HostSync> sync);
  // The device's copy of `id` is newer than the host's until read() brings it back or the
  // block is allocated anew.
  void mark_device_newer(BlockId id);
  bool device_newer(BlockId id) const;

  // A block with one reference. Reuses a free block, then grows, then evicts the least
  // recently used cached block. Throws Error(out_of_memory) when every block the budget
  // allows is in use.
  BlockId allocate();
  // Whether `n` more blocks could be allocated now.
  bool can_allocate(size_t n) const;
  void retain(BlockId id);
  // Drops one reference; at zero a published block is cached, any other is freed.
  void release(BlockId id);
  uint32_t ref_count(BlockId id) const;
  // A number unique in the whole process to this allocation of the block: a copy of its
  // bytes kept elsewhere (a device's mirror) is current while the stamp is unchanged, since
  // every writer other than a backend's forward fills a block right after allocating it.
  uint64_t stamp(BlockId id) const;

  // Publishes a full block under its key; it must never be written again. No-op when the key
  // is already published.
  void publish(BlockId id, const BlockKey& key);
  bool is_published(BlockId id) const;
  // The block published under `key`, retained for the caller; counts a hit or a miss.
  std::optional<BlockId> acquire_published(const BlockKey& key);

  PoolStats stats() const;

 private:
  struct BlockState {
    uint32_t refs = 0;
    uint64_t stamp = 0;
    bool in_lru = false;
    bool device_newer = false;
    std::list<BlockId>::iterator lru_pos;  // this block's node, in lru_ or in spare_
  };
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  BlockId take_block_locked();
  void check_id_locked(BlockId id) const;

  BlockLayout layout_;
  uint64_t budget_bytes_;
  uint64_t capacity_;  // blocks the budget allows

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::byte[], AlignedDelete>> blocks_;
  std::vector<BlockState> state_;
  std::vector<BlockId> free_;
  std::list<BlockId> lru_;  // cached blocks, least recently used first
  // Every block owns one list node, made with the block and moved between these lists by
  // splicing, and free_ has room for every block: releasing never allocates, so it cannot
  // fail when memory runs out (it runs in destructors).
  std::list<BlockId> spare_;
  PrefixIndex index_;
  std::weak_ptr<HostSync> host_sync_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace parley::kv

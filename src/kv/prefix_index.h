// Prefix index: full KV blocks by the chained hash of everything before and in them, so a
// session whose conversation starts with the same tokens (a shared system prompt) reuses
// their K/V instead of computing it. The chain starts from a root that binds the model, the
// KV format and the cache scope: blocks never match across models, formats or scopes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "kv/block_layout.h"

namespace parley::kv {

using BlockId = int32_t;

struct BlockKey {
  uint64_t parent = 0;                        // the previous block's hash, or the root
  std::array<int32_t, kBlockTokens> tokens{};  // the block's tokens
  bool operator==(const BlockKey&) const = default;
};

uint64_t prefix_root(uint64_t model_fingerprint, KvType type, std::string_view cache_scope);
BlockKey make_block_key(uint64_t parent, std::span<const int32_t> tokens);  // tokens: 16
uint64_t block_hash(const BlockKey& key);
// The chained hash of a partially filled block (1 to 15 tokens) after `parent`, as
// block_hash is of a full one: a stored tail is taken only for the tokens it was computed for.
// The count is hashed too, so it never equals the hash of a full block or of a longer tail.
uint64_t partial_block_hash(uint64_t parent, std::span<const int32_t> tokens);

class PrefixIndex {
 public:
  // The block published under exactly this key (parent and tokens are compared, not only
  // the hash).
  std::optional<BlockId> find(const BlockKey& key) const;
  // False when the key is already published (by another block) or its hash is taken.
  bool insert(const BlockKey& key, BlockId id);
  void erase(BlockId id);
  bool contains(BlockId id) const { return by_block_.count(id) != 0; }
  size_t size() const { return by_block_.size(); }

 private:
  struct Entry {
    BlockKey key;
    BlockId id;
  };
  std::unordered_map<uint64_t, Entry> by_hash_;
  std::unordered_map<BlockId, uint64_t> by_block_;
};

}  // namespace parley::kv

#include "kv/prefix_index.h"

#include <algorithm>

#include "common/error.h"
#include "common/hash.h"

namespace parley::kv {

uint64_t prefix_root(uint64_t model_fingerprint, KvType type, std::string_view cache_scope) {
  return Hasher()
      .add(std::string_view("parley-prefix-v1"))
      .add_value(model_fingerprint)
      .add_value(int32_t(type))
      .add_value(kBlockTokens)
      .add(cache_scope)
      .digest();
}

BlockKey make_block_key(uint64_t parent, std::span<const int32_t> tokens) {
  require(tokens.size() == kBlockTokens, Status::internal, "a block key needs 16 tokens");
  BlockKey key;
  key.parent = parent;
  std::copy(tokens.begin(), tokens.end(), key.tokens.begin());
  return key;
}

uint64_t block_hash(const BlockKey& key) {
  return Hasher(key.parent).add(key.tokens.data(), sizeof key.tokens).digest();
}

uint64_t partial_block_hash(uint64_t parent, std::span<const int32_t> tokens) {
  require(!tokens.empty() && tokens.size() < kBlockTokens, Status::internal,
          "a partial block holds 1 to 15 tokens");
  return Hasher(parent)
      .add(std::string_view("partial"))
      .add_value(uint32_t(tokens.size()))
      .add(tokens.data(), tokens.size_bytes())
      .digest();
}

std::optional<BlockId> PrefixIndex::find(const BlockKey& key) const {
  const auto it = by_hash_.find(block_hash(key));
  if (it == by_hash_.end() || !(it->second.key == key)) return std::nullopt;
  return it->second.id;
}

bool PrefixIndex::insert(const BlockKey& key, BlockId id) {
  if (by_block_.count(id)) return false;
  const uint64_t h = block_hash(key);
  if (!by_hash_.emplace(h, Entry{key, id}).second) return false;
  by_block_.emplace(id, h);
  return true;
}

void PrefixIndex::erase(BlockId id) {
  const auto it = by_block_.find(id);
  if (it == by_block_.end()) return;
  by_hash_.erase(it->second);
  by_block_.erase(it);
}

}  // namespace parley::kv

// Prefix keys chain: a block's hash covers everything before it, the model, the KV format and
// the cache scope; the index compares whole keys, not only hashes.
#include <doctest/doctest.h>

#include <numeric>

#include "kv/prefix_index.h"

using namespace parley::kv;

namespace {

std::array<int32_t, kBlockTokens> tokens_from(int32_t first) {
  std::array<int32_t, kBlockTokens> t;
  std::iota(t.begin(), t.end(), first);
  return t;
}

}  // namespace

TEST_CASE("roots differ by model, KV format and scope") {
  const uint64_t base = prefix_root(42, KvType::int8, "");
  CHECK(base == prefix_root(42, KvType::int8, ""));
  CHECK(base != prefix_root(43, KvType::int8, ""));
  CHECK(base != prefix_root(42, KvType::f16, ""));
  CHECK(base != prefix_root(42, KvType::int8, "alice"));
  CHECK(prefix_root(42, KvType::int8, "alice") != prefix_root(42, KvType::int8, "bob"));
}

TEST_CASE("a block's hash depends on its parent and its tokens") {
  const auto t = tokens_from(5);
  const BlockKey k = make_block_key(1, t);
  CHECK(block_hash(k) == block_hash(make_block_key(1, t)));
  CHECK(block_hash(k) != block_hash(make_block_key(2, t)));
  auto u = t;
  u[15] += 1;
  CHECK(block_hash(k) != block_hash(make_block_key(1, u)));
}

TEST_CASE("the index finds exact keys, refuses duplicates, forgets erased blocks") {
  PrefixIndex index;
  const BlockKey a = make_block_key(1, tokens_from(0));
  const BlockKey b = make_block_key(block_hash(a), tokens_from(16));
  CHECK(index.insert(a, 10));
  CHECK(index.insert(b, 11));
  CHECK_FALSE(index.insert(a, 12));   // the key is taken
  CHECK_FALSE(index.insert(make_block_key(9, tokens_from(0)), 10));  // the block is indexed
  CHECK(index.find(a) == 10);
  CHECK(index.find(b) == 11);
  CHECK_FALSE(index.find(make_block_key(2, tokens_from(0))));
  CHECK(index.size() == 2);
  index.erase(10);
  CHECK_FALSE(index.find(a));
  CHECK_FALSE(index.contains(10));
  CHECK(index.find(b) == 11);
  index.erase(10);  // erasing twice is harmless
}

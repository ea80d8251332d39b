// The block pool: reference counts, the budget, the free list, and the LRU cache of published
// prefix blocks (a block whose last user left stays findable until its memory is needed).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>

#include "common/error.h"
#include "kv/block_pool.h"

using namespace parley;
using namespace parley::kv;

namespace {

const BlockLayout kLayout(KvType::int8, KvShape{2, 2, 8});

BlockKey key_of(uint64_t parent, int32_t first_token) {
  std::array<int32_t, kBlockTokens> t;
  std::iota(t.begin(), t.end(), first_token);
  return make_block_key(parent, t);
}

}  // namespace

TEST_CASE("the budget sets how many blocks exist; exhausting it is OUT_OF_MEMORY") {
  BlockPool pool(kLayout, 3 * kLayout.block_bytes() + 7);
  CHECK(pool.stats().total == 3);
  const BlockId a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  CHECK((a != b && b != c && a != c));
  CHECK_FALSE(pool.can_allocate(1));
  try {
    pool.allocate();
    FAIL("allocate past the budget must throw");
  } catch (const Error& e) {
    CHECK(e.status() == Status::out_of_memory);
    CHECK(std::string(e.what()).find("budget") != std::string::npos);
  }
  pool.release(b);
  CHECK(pool.can_allocate(1));
  CHECK(pool.allocate() == b);  // a freed block is reused
  const auto st = pool.stats();
  CHECK(st.allocated == 3);
  CHECK(st.used == 3);
}

TEST_CASE("reference counts: shared blocks, and a block freed only by its last release") {
  BlockPool pool(kLayout, 4 * kLayout.block_bytes());
  const BlockId a = pool.allocate();
  pool.retain(a);
  CHECK(pool.ref_count(a) == 2);
  CHECK(pool.stats().shared == 1);
  pool.release(a);
  CHECK(pool.ref_count(a) == 1);
  CHECK(pool.stats().shared == 0);
  pool.release(a);
  CHECK(pool.ref_count(a) == 0);
  CHECK(pool.stats().used == 0);
  CHECK_THROWS_AS(pool.release(a), Error);  // one release too many is a bug, caught
  CHECK_THROWS_AS(pool.retain(99), Error);
}

TEST_CASE("block memory is the layout's size, aligned, and stable") {
  BlockPool pool(kLayout, 8 * kLayout.block_bytes());
  const BlockId a = pool.allocate();
  std::byte* p = pool.data(a);
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  std::memset(p, 0x5A, kLayout.block_bytes());
  for (int i = 0; i < 7; ++i) pool.allocate();
  CHECK(pool.data(a) == p);  // growing the pool never moves a block
  CHECK(p[kLayout.block_bytes() - 1] == std::byte{0x5A});
}

TEST_CASE("published blocks are found by key, cached when unused, and evicted last-used-first") {
  BlockPool pool(kLayout, 3 * kLayout.block_bytes());
  const BlockKey k1 = key_of(1, 100), k2 = key_of(2, 200);
  const BlockId a = pool.allocate(), b = pool.allocate();
  pool.publish(a, k1);
  pool.publish(b, k2);
  CHECK(pool.is_published(a));

  // Found while in use: shared.
  const auto hit = pool.acquire_published(k1);
  REQUIRE(hit);
  CHECK(*hit == a);
  CHECK(pool.ref_count(a) == 2);
  CHECK_FALSE(pool.acquire_published(key_of(1, 101)));  // other tokens
  CHECK_FALSE(pool.acquire_published(key_of(3, 100)));  // other parent (prefix, scope, model)
  CHECK(pool.stats().prefix_hits == 1);
  CHECK(pool.stats().prefix_misses == 2);

  // Its users leave: it stays cached and can still be found.
  pool.release(a);
  pool.release(a);
  pool.release(b);
  CHECK(pool.stats().cached == 2);
  CHECK(pool.stats().used == 0);
  const auto again = pool.acquire_published(k2);
  REQUIRE(again);
  CHECK(*again == b);
  CHECK(pool.stats().cached == 1);
  pool.release(b);  // b is now the most recently used cached block

  // The budget needs memory: the free slot first, then the least recently used cached block.
  const BlockId c = pool.allocate();
  CHECK((c != a && c != b));
  const BlockId d = pool.allocate();
  CHECK(d == a);  // a was used longer ago than b
  CHECK_FALSE(pool.is_published(a));
  CHECK_FALSE(pool.acquire_published(k1));
  CHECK(pool.acquire_published(k2));  // b survived
}

TEST_CASE("publishing a key twice keeps the first block") {
  BlockPool pool(kLayout, 2 * kLayout.block_bytes());
  const BlockKey k = key_of(7, 0);
  const BlockId a = pool.allocate(), b = pool.allocate();
  pool.publish(a, k);
  pool.publish(b, k);
  CHECK(pool.is_published(a));
  CHECK_FALSE(pool.is_published(b));
  pool.release(b);  // not published: freed, not cached
  CHECK(pool.stats().cached == 0);
  CHECK(pool.can_allocate(1));
}

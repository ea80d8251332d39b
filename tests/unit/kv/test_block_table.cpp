// Block tables: positions map to blocks; forks share full blocks and copy the partial one;
// writes never touch a shared or published block (copy-on-write); published prefixes are
// found again; truncation releases what it drops.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "kv/block_table.h"

using namespace parley::kv;

namespace {

const BlockLayout kLayout(KvType::f32, KvShape{1, 1, 4});

std::vector<float> row(float v) { return std::vector<float>(4, v); }

// Writes value p into K and V of positions [from, to).
void fill(BlockTable& t, uint32_t from, uint32_t to) {
  t.prepare_write(from, to);
  auto view = t.view(to);
  for (uint32_t p = from; p < to; ++p) view.write(0, p, row(float(p)).data(), row(float(p)).data());
}

float read(BlockTable& t, uint32_t p) {
  std::vector<float> out(4);
  t.view(p + 1).read_k(0, p, 0, out.data());
  return out[0];
}

std::vector<int32_t> tokens(size_t n, int32_t first = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

}  // namespace

TEST_CASE("fork shares full blocks, copies the partial one, and both go their own way") {
  BlockPool pool(kLayout, 16 * kLayout.block_bytes());
  BlockTable a(pool, 1);
  fill(a, 0, 40);  // blocks 0, 1 full; block 2 holds 8 positions
  BlockTable b = a.fork(40);
  REQUIRE(b.ids().size() == 3);
  CHECK(b.ids()[0] == a.ids()[0]);
  CHECK(b.ids()[1] == a.ids()[1]);
  CHECK(b.ids()[2] != a.ids()[2]);
  CHECK(pool.ref_count(a.ids()[0]) == 2);
  CHECK(read(b, 37) == 37.0f);

  fill(b, 40, 48);  // b writes its own copy of the partial block
  fill(a, 40, 44);
  CHECK(read(a, 39) == 39.0f);
  CHECK(read(b, 45) == 45.0f);

  // a rewinds into a shared full block and rewrites it: b must not see that.
  a.truncate(20);
  CHECK(a.ids().size() == 2);
  fill(a, 20, 24);
  CHECK(a.ids()[1] != b.ids()[1]);  // copied before the write
  CHECK(read(b, 20) == 20.0f);
  std::vector<float> v(4, -1.0f);
  a.view(24).write(0, 21, v.data(), v.data());
  CHECK(read(b, 21) == 21.0f);
}

TEST_CASE("published full blocks are found by a table with the same root and tokens") {
  BlockPool pool(kLayout, 16 * kLayout.block_bytes());
  const auto t = tokens(40);
  BlockTable a(pool, 7);
  fill(a, 0, 40);
  a.publish_full(t, 40);
  CHECK(pool.is_published(a.ids()[0]));
  CHECK(pool.is_published(a.ids()[1]));
  CHECK_FALSE(pool.is_published(a.ids()[2]));  // partial blocks are never published

  BlockTable b(pool, 7);
  CHECK(b.reuse_published(t, 0, 39) == 32);  // two full blocks before the limit
  CHECK(b.ids()[0] == a.ids()[0]);
  CHECK(read(b, 31) == 31.0f);
  BlockTable limited(pool, 7);
  CHECK(limited.reuse_published(t, 0, 31) == 16);  // the limit keeps the second block out

  BlockTable other_scope(pool, 8);
  CHECK(other_scope.reuse_published(t, 0, 39) == 0);
  auto changed = t;
  changed[3] = 999;
  BlockTable other_tokens(pool, 7);
  CHECK(other_tokens.reuse_published(changed, 0, 39) == 0);
  changed = t;
  changed[20] = 999;  // the first block matches, the second does not
  BlockTable half(pool, 7);
  CHECK(half.reuse_published(changed, 0, 39) == 16);
}

TEST_CASE("writing into a published block copies it first") {
  BlockPool pool(kLayout, 8 * kLayout.block_bytes());
  const auto t = tokens(16);
  BlockTable a(pool, 1);
  fill(a, 0, 16);
  a.publish_full(t, 16);
  const BlockId published = a.ids()[0];
  a.truncate(10);
  fill(a, 10, 16);
  CHECK(a.ids()[0] != published);
  CHECK(pool.is_published(published));  // the original stays findable, unchanged
  BlockTable b(pool, 1);
  CHECK(b.reuse_published(t, 0, 16) == 16);
  CHECK(b.ids()[0] == published);
}

TEST_CASE("truncate and destruction release every block") {
  BlockPool pool(kLayout, 8 * kLayout.block_bytes());
  {
    BlockTable a(pool, 1);
    fill(a, 0, 50);
    CHECK(pool.stats().used == 4);
    a.truncate(17);
    CHECK(pool.stats().used == 2);
    a.truncate(0);
    CHECK(pool.stats().used == 0);
    fill(a, 0, 20);
  }
  CHECK(pool.stats().used == 0);
  CHECK(pool.can_allocate(8));
}

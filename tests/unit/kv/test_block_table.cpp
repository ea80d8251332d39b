// Block tables: positions map to blocks; forks share full blocks and copy the partial one;
// writes never touch a shared or published block (copy-on-write); published prefixes are
// found again; truncation releases what it drops; copies read a block's device-newer bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "common/error.h"
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

namespace {

// A device whose copy of every block holds `value` at every position.
struct FakeDevice final : HostSync {
  float value = 0.0f;
  std::vector<std::pair<BlockId, uint64_t>> calls;  // (block, stamp) asked for
  void bring_to_host(BlockId id, uint64_t stamp, const BlockLayout& layout, std::byte* bytes) override {
    calls.emplace_back(id, stamp);
    auto* f = reinterpret_cast<float*>(bytes);
    std::fill(f, f + layout.block_bytes() / sizeof(float), value);
  }
};

}  // namespace

TEST_CASE("read(): a block newer on the device comes back once; a new allocation is not newer") {
  BlockPool pool(kLayout, 4 * kLayout.block_bytes());
  auto device = std::make_shared<FakeDevice>();
  device->value = 7.0f;
  pool.set_host_sync(device);
  const BlockId id = pool.allocate();
  std::fill_n(reinterpret_cast<float*>(pool.data(id)), kLayout.block_bytes() / 4, 1.0f);

  CHECK(*reinterpret_cast<const float*>(pool.read(id)) == 1.0f);  // not marked: as it is
  CHECK(device->calls.empty());
  pool.mark_device_newer(id);
  CHECK(pool.device_newer(id));
  CHECK(*reinterpret_cast<const float*>(pool.read(id)) == 7.0f);
  REQUIRE(device->calls.size() == 1);
  CHECK(device->calls[0] == std::pair{id, pool.stamp(id)});
  CHECK_FALSE(pool.device_newer(id));
  pool.read(id);
  CHECK(device->calls.size() == 1);  // current now: not asked again

  pool.mark_device_newer(id);
  pool.release(id);
  const BlockId again = pool.allocate();  // the freed block, allocated anew
  CHECK(again == id);
  CHECK_FALSE(pool.device_newer(again));
  pool.read(again);
  CHECK(device->calls.size() == 1);
  pool.release(again);
}

TEST_CASE("copy-on-write and fork copy the device's bytes of a block, not stale host bytes") {
  BlockPool pool(kLayout, 16 * kLayout.block_bytes());
  auto device = std::make_shared<FakeDevice>();
  device->value = 99.0f;
  pool.set_host_sync(device);
  BlockTable a(pool, 1);
  fill(a, 0, 24);  // block 0 full, block 1 holds 8 positions
  for (BlockId id : a.ids()) pool.mark_device_newer(id);

  BlockTable b = a.fork(24);  // copies the partial block 1
  CHECK(read(b, 20) == 99.0f);
  CHECK(device->calls.size() == 1);

  fill(b, 8, 12);  // block 0 is shared: b writes into its own copy of it
  CHECK(device->calls.size() == 2);
  CHECK(read(b, 3) == 99.0f);   // the copy holds what the device had
  CHECK(read(b, 9) == 9.0f);    // and b's own writes
  CHECK(read(a, 3) == 99.0f);   // a's block was brought back, not changed
}

TEST_CASE("read() of a block newer on a device whose backend is gone fails, it does not crash") {
  BlockPool pool(kLayout, 2 * kLayout.block_bytes());
  const BlockId id = pool.allocate();
  pool.mark_device_newer(id);
  CHECK_THROWS_AS(pool.read(id), parley::Error);  // never given a backend
  {
    auto device = std::make_shared<FakeDevice>();
    pool.set_host_sync(device);
  }  // the backend is gone
  try {
    pool.read(id);
    FAIL("read() of a block only a gone device holds returned");
  } catch (const parley::Error& e) {
    CHECK(e.status() == parley::Status::internal);
  }
  pool.release(id);
}

TEST_CASE("a copy whose device read fails takes no block: fork and copy-on-write leave the pool") {
  BlockPool pool(kLayout, 16 * kLayout.block_bytes());
  BlockTable a(pool, 1);
  fill(a, 0, 24);  // block 0 full, block 1 holds 8 positions
  BlockTable shared = a.fork(16);  // shares block 0: a's next write into it copies it
  for (BlockId id : a.ids()) pool.mark_device_newer(id);  // and no backend to bring them back
  const uint64_t used = pool.stats().used;

  CHECK_THROWS_AS(a.fork(24), parley::Error);  // the partial block's copy
  CHECK(pool.stats().used == used);
  CHECK_THROWS_AS(a.prepare_write(8, 12), parley::Error);  // the shared block's copy
  CHECK(pool.stats().used == used);
  CHECK(a.ids().size() == 2);
}

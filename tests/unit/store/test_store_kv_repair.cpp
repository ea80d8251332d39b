// A prefix blob given to save_kv as replacing a damaged one takes the stored blob's place for
// every session that shares it; the references (and so when the block is deleted) stay.
#include <doctest/doctest.h>

#include "store/store.h"
#include "support/shared_assets.h"
#include "support/stored_session.h"

using namespace parley;
using namespace parley::store;
using parley::test::patterned_bytes;
using parley::test::session_named;

namespace {

StoredKv kv_of(std::vector<uint64_t> hashes, uint32_t n_tokens) {
  StoredKv kv;
  kv.model_fingerprint = 1;
  kv.kv_type = 1;
  kv.n_tokens = n_tokens;
  kv.full_block_hashes = std::move(hashes);
  return kv;
}

constexpr uint64_t kShared = 0xFEDCBA9876543210ull;  // above 2^63: SQLite's signed INTEGER
constexpr uint64_t kOwn = 42;

}  // namespace

TEST_CASE("store: a blob replacing a damaged one is stored for every session sharing it") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("a"));
  store.create_session(session_named("b"));
  const auto damaged = patterned_bytes(64, 1);
  const auto good = patterned_bytes(80, 2);
  store.save_kv("a", kv_of({kShared}, 16), std::vector{PrefixBlob{kShared, damaged}});
  store.save_kv("b", kv_of({kShared}, 16), {});

  // An ordinary blob never overwrites a stored one.
  store.save_kv("a", kv_of({kShared}, 16), std::vector{PrefixBlob{kShared, good}});
  CHECK(store.load_prefix_block(kShared) == damaged);

  store.save_kv(
      "a", kv_of({kShared, kOwn}, 32),
      std::vector{PrefixBlob{kShared, good, true}, PrefixBlob{kOwn, patterned_bytes(8, 3)}});
  CHECK(store.load_prefix_block(kShared) == good);
  CHECK(store.kv_bytes("b") == good.size());

  // Still shared: it goes with the last session that references it.
  store.drop_kv("a");
  CHECK(store.load_prefix_block(kShared) == good);
  CHECK_FALSE(store.has_prefix_block(kOwn));
  store.drop_kv("b");
  CHECK_FALSE(store.has_prefix_block(kShared));
}

TEST_CASE("store: a blob replacing a damaged one that is gone meanwhile is inserted") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("a"));
  const auto good = patterned_bytes(80, 2);
  store.save_kv("a", kv_of({kShared}, 16), std::vector{PrefixBlob{kShared, good, true}});
  CHECK(store.load_prefix_block(kShared) == good);
}

// The session store's KV half: a session's spilled KV, and prefix blocks stored once however
// many sessions share them, deleted with their last reference.
#include <doctest/doctest.h>

#include <filesystem>

#include "append_turns.h"
#include "common/error.h"
#include "store/store.h"
#include "support/shared_assets.h"
#include "support/stored_session.h"

using namespace parley;
using namespace parley::store;
using parley::test::patterned_bytes;
using parley::test::session_named;

namespace {

StoredKv kv_of(std::vector<uint64_t> hashes, std::vector<std::byte> tail, uint32_t n_tokens) {
  StoredKv kv;
  kv.model_fingerprint = 0x8000000000000001ull;
  kv.kv_type = 1;
  kv.n_tokens = n_tokens;
  kv.full_block_hashes = std::move(hashes);
  kv.tail_blob = std::move(tail);
  return kv;
}

template <class F>
Status status_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

// Hashes above 2^63 check the bit-cast to SQLite's signed INTEGER.
constexpr uint64_t kSystemPromptBlock = 0xFEDCBA9876543210ull;
constexpr uint64_t kSecondBlock = 0x0123456789ABCDEFull;
constexpr uint64_t kTailHash = 0x8899AABBCCDDEEFFull;

}  // namespace

TEST_CASE("store: save_kv and load_kv round-trip a session's KV") {
  test::TempDir dir;
  const std::string path = (dir / "kv.db").string();
  const auto block0 = patterned_bytes(5000, 1), block1 = patterned_bytes(7000, 2),
             tail = patterned_bytes(900, 3);
  {
    Store store(path);
    store.create_session(session_named("s"));
    CHECK_FALSE(store.load_kv("s").has_value());
    CHECK_FALSE(store.has_prefix_block(kSystemPromptBlock));
    StoredKv kv = kv_of({kSystemPromptBlock, kSecondBlock}, tail, 40);
    kv.tail_hash = kTailHash;
    store.save_kv(
        "s", kv,
        std::vector{PrefixBlob{kSystemPromptBlock, block0}, PrefixBlob{kSecondBlock, block1}});
  }
  Store store(path);
  const auto kv = store.load_kv("s");
  REQUIRE(kv.has_value());
  CHECK(kv->model_fingerprint == 0x8000000000000001ull);
  CHECK(kv->kv_type == 1);
  CHECK(kv->n_tokens == 40);
  CHECK(kv->full_block_hashes == std::vector<uint64_t>{kSystemPromptBlock, kSecondBlock});
  CHECK(kv->tail_blob == tail);
  CHECK(kv->tail_hash == kTailHash);
  CHECK(store.has_prefix_block(kSystemPromptBlock));
  CHECK(store.load_prefix_block(kSystemPromptBlock) == block0);
  CHECK(store.load_prefix_block(kSecondBlock) == block1);
  CHECK_FALSE(store.load_prefix_block(42).has_value());
  CHECK(store.kv_bytes("s") == block0.size() + block1.size() + tail.size());
  CHECK(store.kv_bytes("nobody") == 0);
}

TEST_CASE("store: a KV of only full blocks, or only a tail, or nothing") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("s"));
  store.save_kv("s", kv_of({7}, {}, 16), std::vector{PrefixBlob{7, patterned_bytes(10, 0)}});
  CHECK(store.load_kv("s")->tail_blob.empty());
  CHECK_FALSE(store.load_kv("s")->tail_hash.has_value());  // no tail, no tail hash
  store.save_kv("s", kv_of({}, patterned_bytes(33, 9), 3), {});
  CHECK(store.load_kv("s")->full_block_hashes.empty());
  CHECK(store.load_kv("s")->tail_blob.size() == 33);
  CHECK_FALSE(store.has_prefix_block(7));  // replaced KV: its block lost its only reference
  store.save_kv("s", kv_of({}, {}, 0), {});
  CHECK(store.load_kv("s")->n_tokens == 0);
}

TEST_CASE("store: a prefix block is stored once, shared, and deleted with its last reference") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("a"));
  store.create_session(session_named("b"));
  const auto shared = patterned_bytes(20000, 5);
  store.save_kv("a", kv_of({kSystemPromptBlock}, patterned_bytes(100, 1), 20),
                std::vector{PrefixBlob{kSystemPromptBlock, shared}});
  const uint64_t bytes_with_one = store.file_bytes();
  // b finds the block already stored and only references it.
  REQUIRE(store.has_prefix_block(kSystemPromptBlock));
  store.save_kv("b", kv_of({kSystemPromptBlock, kSecondBlock}, {}, 32),
                std::vector{PrefixBlob{kSecondBlock, patterned_bytes(300, 2)}});
  CHECK(store.file_bytes() < bytes_with_one + shared.size() / 2);  // not stored twice
  CHECK(store.kv_bytes("a") == shared.size() + 100);
  CHECK(store.kv_bytes("b") == shared.size() + 300);

  // Offering the same blob again is harmless: the stored one stays.
  store.save_kv("b", kv_of({kSystemPromptBlock}, {}, 16),
                std::vector{PrefixBlob{kSystemPromptBlock, shared}});
  CHECK_FALSE(store.has_prefix_block(kSecondBlock));  // b's replaced KV dropped its own block

  store.drop_kv("a");
  CHECK_FALSE(store.load_kv("a").has_value());
  CHECK(store.has_prefix_block(kSystemPromptBlock));  // b still uses it
  CHECK(store.load_prefix_block(kSystemPromptBlock) == shared);
  store.drop_kv("b");
  CHECK_FALSE(store.has_prefix_block(kSystemPromptBlock));
  store.drop_kv("b");  // dropping nothing is fine
  store.drop_kv("never-existed");
}

TEST_CASE("store: deleting a session or truncating its turns drops its KV") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("a"));
  store.create_session(session_named("b"));
  append_turns(store, "a", 0, std::vector{StoredTurn{1, "hi", {1, 2}, true}});
  store.save_kv(
      "a", kv_of({1, 2}, patterned_bytes(10, 0), 40),
      std::vector{PrefixBlob{1, patterned_bytes(64, 1)}, PrefixBlob{2, patterned_bytes(64, 2)}});
  store.save_kv("b", kv_of({1}, {}, 16), {});

  store.truncate_turns("a", 1, 1);  // even keeping every turn, the KV goes
  CHECK_FALSE(store.load_kv("a").has_value());
  CHECK(store.kv_bytes("a") == 0);
  CHECK(store.has_prefix_block(1));  // still b's
  CHECK_FALSE(store.has_prefix_block(2));
  CHECK(store.load_turns("a").size() == 1);

  store.delete_session("b");
  CHECK_FALSE(store.has_prefix_block(1));
}

TEST_CASE("store: truncating turns keeps the KV of the ids the kept turns still have") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("a"));
  append_turns(store, "a", 0,
               std::vector{StoredTurn{1, "hi", {1, 2}, true}, StoredTurn{2, "yo", {3}, true}});
  const auto blobs =
      std::vector{PrefixBlob{1, patterned_bytes(64, 1)}, PrefixBlob{2, patterned_bytes(64, 2)},
                  PrefixBlob{3, patterned_bytes(64, 3)}};
  StoredKv with_tail = kv_of({1, 2, 3}, patterned_bytes(10, 0), 52);
  with_tail.tail_hash = kTailHash;
  store.save_kv("a", with_tail, blobs);

  store.truncate_turns("a", 2, 2, 60);  // all 52 stored tokens are kept: nothing changes
  auto kv = store.load_kv("a");
  REQUIRE(kv.has_value());
  CHECK(kv->n_tokens == 52);
  CHECK(kv->tail_blob == patterned_bytes(10, 0));
  CHECK(kv->tail_hash == kTailHash);

  store.truncate_turns("a", 2, 1, 40);  // blocks 0 and 1 (32 tokens) lie within the first 40
  kv = store.load_kv("a");
  REQUIRE(kv.has_value());
  CHECK(kv->n_tokens == 32);
  CHECK(kv->full_block_hashes == std::vector<uint64_t>{1, 2});
  CHECK(kv->tail_blob.empty());
  CHECK_FALSE(kv->tail_hash.has_value());  // the tail's hash went with it
  CHECK(store.has_prefix_block(2));
  CHECK_FALSE(store.has_prefix_block(3));  // nobody references it any more
  CHECK(store.load_turns("a").size() == 1);

  store.truncate_turns("a", 1, 1, 15);  // not one whole block
  CHECK_FALSE(store.load_kv("a").has_value());
  CHECK_FALSE(store.has_prefix_block(1));
}

TEST_CASE("store: save_kv refuses KV that would reference nothing or leave orphans") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  store.create_session(session_named("s"));
  store.save_kv("s", kv_of({1}, patterned_bytes(5, 0), 20),
                std::vector{PrefixBlob{1, patterned_bytes(8, 1)}});
  // A block neither stored nor given.
  CHECK(status_of([&] {
          store.save_kv("s", kv_of({1, 99}, {}, 32), {});
        }) == Status::invalid_argument);
  // A blob that no block of the session refers to would never be deleted.
  CHECK(status_of([&] {
          store.save_kv("s", kv_of({1}, {}, 16), std::vector{PrefixBlob{5, patterned_bytes(8, 1)}});
        }) == Status::invalid_argument);
  CHECK(status_of([&] { store.save_kv("nobody", kv_of({}, {}, 0), {}); }) == Status::not_found);
  // A writer that left another number of turns there: another writer changed the transcript.
  CHECK(status_of([&] { store.save_kv("s", kv_of({}, patterned_bytes(5, 2), 3), {}, 1); }) ==
        Status::invalid_argument);
  store.save_kv("s", kv_of({1}, patterned_bytes(5, 0), 20), {}, 0);  // the count it holds: stored
  // The failed calls changed nothing.
  const auto kv = store.load_kv("s");
  REQUIRE(kv.has_value());
  CHECK(kv->n_tokens == 20);
  CHECK(kv->tail_blob.size() == 5);
  CHECK_FALSE(store.has_prefix_block(5));
  CHECK_FALSE(store.has_prefix_block(99));
}

TEST_CASE("store: file_bytes grows with what is stored and is a whole number of pages") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  const uint64_t empty = store.file_bytes();
  CHECK(empty > 0);
  CHECK(empty % 16384 == 0);  // the page size chosen for new files
  store.create_session(session_named("s"));
  store.save_kv("s", kv_of({3}, {}, 16), std::vector{PrefixBlob{3, patterned_bytes(1 << 20, 4)}});
  const uint64_t full = store.file_bytes();
  CHECK(full >= empty + (1u << 20));
  CHECK(full < empty + (1u << 20) + (1u << 18));  // overhead stays small
  CHECK(store.kv_bytes("s") == (1u << 20));
}

TEST_CASE("store: session_summary has the header, the turn count and the KV bytes at once") {
  test::TempDir dir;
  Store store((dir / "kv.db").string());
  CHECK_FALSE(store.session_summary("a").has_value());
  StoredSession header = session_named("a");
  header.created_ms = 1000;
  header.updated_ms = 2000;
  store.create_session(header);
  auto summary = store.session_summary("a");
  REQUIRE(summary.has_value());
  CHECK(summary->session.id == "a");
  CHECK(summary->session.created_ms == 1000);
  CHECK(summary->n_turns == 0);
  CHECK(summary->kv_bytes == 0);

  append_turns(store, "a", 0,
               std::vector{StoredTurn{1, "hi", {1, 2}, true}, StoredTurn{2, "yo", {3}, true}});
  store.save_kv("a", kv_of({1}, patterned_bytes(10, 0), 20),
                std::vector{PrefixBlob{1, patterned_bytes(64, 1)}});
  summary = store.session_summary("a");
  REQUIRE(summary.has_value());
  CHECK(summary->n_turns == 2);
  CHECK(summary->session.updated_ms >= 2000);
  CHECK(summary->kv_bytes == store.kv_bytes("a"));
  CHECK(summary->kv_bytes > 0);
}

TEST_CASE("store: the WAL stays a few MiB however much KV goes through it") {
  // A long-running program spills and restores KV all day: before it was checkpointed at 16 MiB
  // and never cut back, the WAL alone could fill a small volume, many times the data.
  test::TempDir dir;
  const auto path = dir / "wal.db";
  Store store(path.string());
  store.create_session(session_named("s"));
  constexpr size_t kBlobBytes = 100 << 10;
  for (int i = 0; i < 120; ++i) {  // 12 MiB written, 100 KiB kept
    store.save_kv("s", kv_of({}, patterned_bytes(kBlobBytes, uint8_t(i)), 5), {});
  }
  const auto wal = std::filesystem::path(path.string() + "-wal");
  REQUIRE(std::filesystem::exists(wal));
  const auto wal_bytes = std::filesystem::file_size(wal);
  MESSAGE("WAL " << wal_bytes << " bytes");
  CHECK(wal_bytes <= (4u << 20) + 2 * kBlobBytes);
  REQUIRE(store.load_kv("s").has_value());
  CHECK(store.load_kv("s")->tail_blob == patterned_bytes(kBlobBytes, 119));
}

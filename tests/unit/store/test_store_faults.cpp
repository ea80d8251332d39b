// Storage failures: a full or failing disk (injected through the faulty VFS) and a database
// locked by another connection. Each is Error(storage) with SQLite's message, changes nothing,
// and the store works again once the cause is gone.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "append_turns.h"
#include "common/error.h"
#include "store/store.h"
#include "support/error_check.h"
#include "support/faulty_vfs.h"
#include "support/shared_assets.h"
#include "support/stored_session.h"

using namespace parley;
using namespace parley::store;
using parley::test::session_named;

namespace {

StoredTurn turn_with(std::string text) {
  return StoredTurn{1, std::move(text), std::vector<int32_t>(5000, 42), true};
}

std::vector<std::byte> blob_of(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(seed ^ (i * 131));
  return v;
}

StoredKv kv_of(std::vector<uint64_t> hashes, size_t tail_bytes, uint32_t n_tokens) {
  StoredKv kv;
  kv.kv_type = 1;
  kv.n_tokens = n_tokens;
  kv.full_block_hashes = std::move(hashes);
  kv.tail_blob = blob_of(tail_bytes, 9);
  return kv;
}

// The message of the storage error a call throws; fails the test if it throws nothing or
// something else.
template <class F>
std::string storage_error_of(F&& f) {
  const auto [status, message] = parley::test::error_of(f);
  CHECK_MESSAGE(status == Status::storage, message);
  return message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The faults a disk can have while SQLite writes: full at once, full partway through a large
// transaction, or a write error.
struct WriteFault {
  const char* name;
  uint64_t bytes_before;
  int code;
};
constexpr WriteFault kWriteFaults[] = {
    {"disk full", 0, SQLITE_FULL},
    {"disk full partway", 64 * 1024, SQLITE_FULL},
    {"write error", 0, SQLITE_IOERR_WRITE},
};

}  // namespace

TEST_CASE("store vfs: a store opened through the faulty VFS works while no fault is set") {
  test::TempDir dir;
  test::FaultyVfs vfs("parley-faulty-plain");
  const std::string path = (dir / "chat.db").string();
  {
    Store store(path, StoreOptions{vfs.name()});
    store.create_session(session_named("s"));
    append_turns(store, "s", 0, std::vector{turn_with("hello")});
    CHECK(store.load_turns("s").size() == 1);
  }
  CHECK(vfs.syncs() > 0);
  CHECK(vfs.failures() == 0);
  Store plain(path);  // and the file is an ordinary store
  CHECK(plain.load_turns("s")[0].text == "hello");
}

TEST_CASE("store: a write failure while turns are added is Error(storage) and loses nothing") {
  for (const WriteFault& fault : kWriteFaults) {
    INFO("fault: " << fault.name);
    test::TempDir dir;
    test::FaultyVfs vfs("parley-faulty-append");
    const std::string path = (dir / "chat.db").string();
    {
      Store store(path, StoreOptions{vfs.name()});
      store.create_session(session_named("s"));
      append_turns(store, "s", 0, std::vector{turn_with("first")});

      // Large enough that the partway fault fires inside the transaction.
      const std::vector big{turn_with(std::string(300000, 'x'))};
      vfs.fail_writes_after(fault.bytes_before, fault.code);
      const std::string message = storage_error_of([&] { append_turns(store, "s", 1, big); });
      CHECK(contains(message, "replace_turns_from"));
      CHECK(contains(message, sqlite3_errstr(fault.code)));  // SQLite's own words
      CHECK(vfs.failures() > 0);
      CHECK(store.load_turns("s").size() == 1);

      // The disk has room again: the same store carries on.
      vfs.clear();
      append_turns(store, "s", 1, std::vector{turn_with("second")});
      CHECK(store.load_turns("s").size() == 2);

      // Fails again, and the store is closed while the disk is still full.
      vfs.fail_writes_after(fault.bytes_before, fault.code);
      storage_error_of([&] { append_turns(store, "s", 2, big); });
    }
    vfs.clear();
    // Reopened without the fault: every committed turn, nothing of the failed ones.
    Store reopened(path);
    CHECK_FALSE(reopened.recovery().has_value());
    const auto turns = reopened.load_turns("s");
    REQUIRE(turns.size() == 2);
    CHECK(turns[0].text == "first");
    CHECK(turns[1].text == "second");
    append_turns(reopened, "s", 2, std::vector{turn_with("third")});
    CHECK(reopened.load_turns("s").size() == 3);
  }
}

// "disk I/O error" is all SQLite says for a write that fails with ENOSPC, EFBIG or EIO alike.
TEST_CASE("store: an I/O error names the OS error behind it") {
  for (const int os_error : {ENOSPC, EFBIG, EIO}) {
    CAPTURE(os_error);
    test::TempDir dir;
    test::FaultyVfs vfs("parley-faulty-errno");
    Store store((dir / "chat.db").string(), StoreOptions{vfs.name()});
    store.create_session(session_named("s"));
    vfs.fail_writes_after(0, SQLITE_IOERR_WRITE);
    vfs.report_os_error(os_error);
    const std::string message = storage_error_of(
        [&] { append_turns(store, "s", 0, std::vector{turn_with("into a failing disk")}); });
    CAPTURE(message);
    CHECK(contains(message, std::string(sqlite3_errstr(SQLITE_IOERR_WRITE)) + " (" +
                                std::strerror(os_error) + ")"));
  }
}

TEST_CASE("store: a write failure during save_kv is Error(storage) and keeps the old KV") {
  for (const WriteFault& fault : kWriteFaults) {
    INFO("fault: " << fault.name);
    test::TempDir dir;
    test::FaultyVfs vfs("parley-faulty-kv");
    const std::string path = (dir / "kv.db").string();
    const auto block1 = blob_of(40000, 1);
    {
      Store store(path, StoreOptions{vfs.name()});
      store.create_session(session_named("s"));
      append_turns(store, "s", 0, std::vector{turn_with("kept")});
      store.save_kv("s", kv_of({1}, 100, 20), std::vector{PrefixBlob{1, block1}});

      vfs.fail_writes_after(fault.bytes_before, fault.code);
      const std::string message = storage_error_of([&] {
        store.save_kv(
            "s", kv_of({2, 3}, 500, 40),
            std::vector{PrefixBlob{2, blob_of(200000, 2)}, PrefixBlob{3, blob_of(200000, 3)}});
      });
      CHECK(contains(message, "save_kv"));
      CHECK(contains(message, sqlite3_errstr(fault.code)));
      CHECK(store.load_kv("s")->full_block_hashes == std::vector<uint64_t>{1});
      CHECK(store.has_prefix_block(1));
      CHECK_FALSE(store.has_prefix_block(2));
      // A failing drop_kv changes nothing either.
      storage_error_of([&] { store.drop_kv("s"); });
      CHECK(store.load_kv("s").has_value());
    }
    vfs.clear();
    Store reopened(path, StoreOptions{vfs.name()});
    CHECK_FALSE(reopened.recovery().has_value());
    const auto kv = reopened.load_kv("s");
    REQUIRE(kv.has_value());
    CHECK(kv->n_tokens == 20);
    CHECK(reopened.load_prefix_block(1) == block1);
    CHECK_FALSE(reopened.has_prefix_block(2));
    CHECK(reopened.load_turns("s").size() == 1);
    reopened.save_kv("s", kv_of({1, 2}, 10, 40), std::vector{PrefixBlob{2, blob_of(1000, 2)}});
    CHECK(reopened.load_kv("s")->full_block_hashes == std::vector<uint64_t>{1, 2});
  }
}

TEST_CASE("store: a failing fsync during a turn commit is Error(storage)") {
  test::TempDir dir;
  test::FaultyVfs vfs("parley-faulty-sync");
  Store store((dir / "chat.db").string(), StoreOptions{vfs.name()});
  store.create_session(session_named("s"));
  append_turns(store, "s", 0, std::vector{turn_with("first")});
  vfs.fail_syncs(SQLITE_IOERR_FSYNC);
  const std::string message =
      storage_error_of([&] { append_turns(store, "s", 1, std::vector{turn_with("unsynced")}); });
  CHECK(contains(message, sqlite3_errstr(SQLITE_IOERR_FSYNC)));
  // Not reported done, so not counted: the next turn still goes at index 1.
  vfs.clear();
  append_turns(store, "s", 1, std::vector{turn_with("second")});
  const auto turns = store.load_turns("s");
  REQUIRE(turns.size() == 2);
  CHECK(turns[1].text == "second");
}

TEST_CASE("store: turn commits are synced to disk before they return; KV commits need not be") {
  test::TempDir dir;
  test::FaultyVfs vfs("parley-faulty-count");
  Store store((dir / "chat.db").string(), StoreOptions{vfs.name()});
  store.create_session(session_named("s"));

  uint64_t before = vfs.wal_syncs();
  append_turns(store, "s", 0, std::vector{turn_with("durable")});
  CHECK(vfs.wal_syncs() > before);  // synchronous=FULL: the WAL is fsynced at COMMIT

  before = vfs.wal_syncs();
  store.save_kv("s", kv_of({1}, 100, 20), std::vector{PrefixBlob{1, blob_of(5000, 1)}});
  store.drop_kv("s");
  CHECK(vfs.wal_syncs() == before);  // synchronous=NORMAL: no fsync until a checkpoint

  before = vfs.wal_syncs();
  store.truncate_turns("s", 1, 0);  // back to FULL for the transcript
  CHECK(vfs.wal_syncs() > before);
}

TEST_CASE("store: a database locked by another connection is Error(storage) after the timeout") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  {
    Store setup(path);
    setup.create_session(session_named("s"));
    append_turns(setup, "s", 0, std::vector{turn_with("before the lock")});
  }
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);

  constexpr int kTimeoutMs = 150;
  Store store(path, StoreOptions{"", kTimeoutMs});  // opening needs no write lock
  const auto start = std::chrono::steady_clock::now();
  const std::string message =
      storage_error_of([&] { append_turns(store, "s", 1, std::vector{turn_with("blocked")}); });
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(contains(message, "database is locked"));
  CHECK(waited >= std::chrono::milliseconds(kTimeoutMs - 20));  // it waited, then gave up
  CHECK(waited < std::chrono::seconds(3));
  storage_error_of([&] { store.create_session(session_named("t")); });
  storage_error_of([&] { store.save_kv("s", kv_of({}, 10, 3), {}); });
  // Readers are not blocked by a writer in WAL mode.
  CHECK(store.load_turns("s").size() == 1);

  REQUIRE(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);
  append_turns(store, "s", 1, std::vector{turn_with("after the lock")});
  CHECK(store.load_turns("s").size() == 2);
  CHECK_FALSE(store.load_session("t").has_value());
}

TEST_CASE("store: opening a store on a disk without room says to free space") {
  struct Case {
    const char* name;
    int code;
    int os_error;
    bool remedy;
  };
  for (const Case& c : {Case{"disk full", SQLITE_FULL, 0, true},
                        Case{"ENOSPC", SQLITE_IOERR_WRITE, ENOSPC, true},
                        Case{"file size limit", SQLITE_IOERR_WRITE, EFBIG, true},
                        Case{"failing disk", SQLITE_IOERR_WRITE, EIO, false}}) {
    const std::string name = c.name;
    CAPTURE(name);
    test::TempDir dir;
    test::FaultyVfs vfs("parley-faulty-open");
    vfs.fail_writes_after(0, c.code);
    if (c.os_error) vfs.report_os_error(c.os_error);
    const std::string path = (dir / "new.db").string();
    const std::string message =
        storage_error_of([&] { Store store(path, StoreOptions{vfs.name()}); });
    CAPTURE(message);
    CHECK(contains(message, "opening " + path));
    CHECK(contains(message, "free space on its disk") == c.remedy);
    // Which step of the opening met the full disk is not the reader's business.
    CHECK(contains(message, "its disk has no room for the store") == c.remedy);
    CHECK_FALSE((c.remedy && contains(message, "prepare")));
    vfs.clear();
    Store store(path, StoreOptions{vfs.name()});  // with room, the same open works
    store.create_session(session_named("s"));
  }
}

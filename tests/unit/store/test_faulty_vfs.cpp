// The test VFS itself, driven through plain SQLite: it forwards everything, and each fault
// fails the calls it names, with the code it was given, until cleared.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <string>

#include "support/faulty_vfs.h"
#include "support/shared_assets.h"

using parley::test::FaultyVfs;

namespace {

class VfsDb {
 public:
  VfsDb(const std::string& path, const std::string& vfs) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            vfs.c_str()) == SQLITE_OK);
    sqlite3_extended_result_codes(db_, 1);
  }
  ~VfsDb() { sqlite3_close(db_); }
  int exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  int64_t count() {
    sqlite3_stmt* statement = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, "SELECT count(*) FROM t", -1, &statement, nullptr) ==
            SQLITE_OK);
    REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
};

const std::string kRow = "INSERT INTO t VALUES (randomblob(20000))";

}  // namespace

TEST_CASE("faulty vfs: writes fail once the byte budget is spent, until cleared") {
  parley::test::TempDir dir;
  FaultyVfs vfs("parley-faulty-self-write");
  VfsDb db((dir / "v.db").string(), vfs.name());
  REQUIRE(db.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x BLOB)") == SQLITE_OK);

  vfs.fail_writes_after(1 << 20, SQLITE_FULL);  // room for a few rows
  int inserted = 0;
  int rc = SQLITE_OK;
  while ((rc = db.exec(kRow)) == SQLITE_OK) ++inserted;
  CHECK(rc == SQLITE_FULL);
  CHECK(inserted >= 10);  // about 1 MiB went through before the disk filled
  CHECK(inserted < 60);
  CHECK(vfs.failures() >= 1);
  CHECK(db.exec(kRow) == SQLITE_FULL);  // a full disk stays full
  CHECK(db.count() == inserted);

  vfs.clear();
  CHECK(db.exec(kRow) == SQLITE_OK);
  CHECK(db.count() == inserted + 1);

  vfs.fail_writes_after(0, SQLITE_IOERR_WRITE);
  CHECK(db.exec(kRow) == SQLITE_IOERR_WRITE);
}

TEST_CASE("faulty vfs: syncs and truncates fail on command, and syncs are counted") {
  parley::test::TempDir dir;
  FaultyVfs vfs("parley-faulty-self-sync");
  VfsDb db((dir / "v.db").string(), vfs.name());
  REQUIRE(
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (x BLOB)") ==
      SQLITE_OK);
  const uint64_t before = vfs.wal_syncs();
  REQUIRE(db.exec(kRow) == SQLITE_OK);
  CHECK(vfs.wal_syncs() > before);
  CHECK(vfs.syncs() >= vfs.wal_syncs());

  vfs.fail_syncs(SQLITE_IOERR_FSYNC);
  CHECK(db.exec(kRow) == SQLITE_IOERR_FSYNC);
  vfs.clear();
  CHECK(db.exec(kRow) == SQLITE_OK);

  // A TRUNCATE checkpoint empties the WAL with xTruncate.
  vfs.fail_truncates(SQLITE_IOERR_TRUNCATE);
  CHECK(db.exec("PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_IOERR_TRUNCATE);
  vfs.clear();
  CHECK(db.exec("PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK);
  CHECK(db.count() >= 2);
}

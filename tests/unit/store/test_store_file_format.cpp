// The store as a file format: identity (application_id), versions (user_version and the
// compatible_version meta row), forward migrations, the settings a new file gets, and rows
// that cannot be read back. The files are inspected and edited with plain SQLite.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "append_turns.h"
#include "common/error.h"
#include "store/schema.h"
#include "store/store.h"
#include "support/shared_assets.h"
#include "support/stored_session.h"

using namespace parley;
using namespace parley::store;
using parley::test::session_named;

namespace {

constexpr int64_t kParleyApplicationId = 1347570777;  // 'PRLY'

// A plain connection, as another program (or a newer Parley) would use the file.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    INFO(sql << ": " << (message ? message : ""));
    sqlite3_free(message);
    REQUIRE(rc == SQLITE_OK);
  }
  sqlite3_stmt* query(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
    return statement;
  }
  int64_t int64(const std::string& sql) {
    sqlite3_stmt* statement = query(sql);
    const int64_t value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return value;
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* statement = query(sql);
    std::string value(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
    sqlite3_finalize(statement);
    return value;
  }

 private:
  sqlite3* db_ = nullptr;
};

void make_store_with_turns(const std::string& path) {
  Store store(path);
  store.create_session(session_named("s", 5));
  append_turns(store, "s", 0,
               std::vector{StoredTurn{0, "sys", {1, 2}, true}, StoredTurn{1, "u", {3}, true},
                           StoredTurn{2, "a", {4, 5, 6}, true}});
}

Error error_opening(const std::string& path) {
  try {
    Store store(path);
  } catch (const Error& e) {
    return e;
  }
  FAIL("opening " << path << " should have failed");
  return Error(Status::ok, "");
}

constexpr uid_t kNobody = 65534;
constexpr int kCannotDropRoot = 77;

// Opening `path` where file permissions apply: in this process, or when it runs as root (to
// which they do not), in a child process with the ids of "nobody" (the test gives it the
// folder). The error's message, "" when the store opened; nullopt when root cannot become
// nobody here (no such permission in a container).
std::optional<std::string> error_opening_unprivileged(const std::string& path) {
  const auto message_of_open = [&] {
    try {
      Store store(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  if (::geteuid() != 0) return message_of_open();
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    const bool dropped = ::setgid(kNobody) == 0 && ::setuid(kNobody) == 0;
    if (!dropped) ::_exit(kCannotDropRoot);
    const std::string message = message_of_open();
    const bool written = ::write(fds[1], message.data(), message.size()) == ssize_t(message.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  const std::string message = test::read_to_end(fds[0]);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kCannotDropRoot) return std::nullopt;
  REQUIRE(WEXITSTATUS(status) == 0);
  return message;
}

// Gives `dir` and what it holds to the user error_opening_unprivileged() runs as.
void hand_over(const std::filesystem::path& dir) {
  if (::geteuid() != 0) return;
  REQUIRE(::chown(dir.c_str(), kNobody, kNobody) == 0);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    REQUIRE(::chown(entry.path().c_str(), kNobody, kNobody) == 0);
  }
}

size_t files_in(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                           std::filesystem::directory_iterator()));
}

}  // namespace

TEST_CASE("store schema: a new file is a Parley store in WAL mode with 16 KiB pages") {
  test::TempDir dir;
  const std::string path = (dir / "new.db").string();
  { Store store(path); }
  RawDb raw(path);
  CHECK(raw.int64("PRAGMA application_id") == kParleyApplicationId);
  CHECK(raw.int64("PRAGMA user_version") == 3);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
  CHECK(raw.int64("PRAGMA page_size") == 16384);
  CHECK(raw.int64("SELECT value FROM meta WHERE key = 'compatible_version'") == 1);
  for (const char* table :
       {"meta", "sessions", "turns", "kv_sessions", "kv_block_refs", "prefix_blocks"}) {
    CAPTURE(table);
    CHECK(raw.int64(
              std::string("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '") +
              table + "'") == 1);
  }
}

TEST_CASE("store migration: an empty file, and a blank SQLite file at user_version 0, migrate") {
  test::TempDir dir;
  const std::string empty = (dir / "empty.db").string();
  std::ofstream(empty).close();  // zero bytes
  {
    Store store(empty);
    store.create_session(session_named("s", 5));
  }
  CHECK(RawDb(empty).int64("PRAGMA user_version") == 3);

  // A database file that exists but holds nothing yet (4 KiB pages, rollback journal).
  const std::string blank = (dir / "blank.db").string();
  {
    RawDb raw(blank);
    raw.exec("PRAGMA application_id = " + std::to_string(kParleyApplicationId));
    CHECK(raw.int64("PRAGMA user_version") == 0);
    CHECK(raw.int64("PRAGMA page_count") > 0);
  }
  {
    Store store(blank);
    store.create_session(session_named("s", 5));
    CHECK(store.list_sessions().size() == 1);
  }
  RawDb raw(blank);
  CHECK(raw.int64("PRAGMA user_version") == 3);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
}

namespace {

// A file version 1 made: the tables as they were, a session with turns, no revisions.
void make_version_1_store(const std::string& path) {
  RawDb raw(path);
  raw.exec("PRAGMA application_id = " + std::to_string(kParleyApplicationId));
  raw.exec(std::string(content_schema_v1()));
  raw.exec(std::string(kv_schema_v1()));
  raw.exec("INSERT INTO meta (key, value) VALUES ('compatible_version', 1)");
  raw.exec("INSERT INTO sessions VALUES ('s', 0, 'raw', '', '', 0, 1, 1, 1)");
  raw.exec("INSERT INTO turns VALUES ('s', 0, 1, 'old', x'01000000', 1)");
  raw.exec("PRAGMA user_version = 1");
}

}  // namespace

TEST_CASE("store migration: a version 1 file gets revisions that version 1 writes bump too") {
  test::TempDir dir;
  const std::string path = (dir / "v1.db").string();
  make_version_1_store(path);
  int64_t seen = 0;
  {
    Store store(path);
    CHECK(store.load_turns("s").size() == 1);
    seen = store.load_session("s")->revision;
    seen = store.replace_turns_from("s", 1, 1, std::vector{StoredTurn{2, "new", {2}, true}}, seen);
  }
  RawDb raw(path);
  CHECK(raw.int64("PRAGMA user_version") == 3);
  // Version 1 code can still use the file: its writes fire the triggers.
  CHECK(raw.int64("SELECT value FROM meta WHERE key = 'compatible_version'") == 1);
  CHECK(raw.int64("SELECT revision FROM sessions WHERE id = 's'") == seen);
  raw.exec("UPDATE sessions SET n_turns = 2, updated_ms = 5 WHERE id = 's'");  // as v1 writes
  const int64_t bumped = raw.int64("SELECT revision FROM sessions WHERE id = 's'");
  CHECK(bumped > seen);
  raw.exec("DELETE FROM sessions WHERE id = 's'");
  raw.exec(
      "INSERT INTO sessions (id, model_fingerprint, chat_template, system_prompt,"
      " cache_scope, overflow, created_ms, updated_ms, n_turns)"
      " VALUES ('s', 0, 'raw', '', '', 0, 1, 1, 0)");
  CHECK(raw.int64("SELECT revision FROM sessions WHERE id = 's'") > bumped);
}

namespace {

// A file version 2 made: version 1's, migrated as version 2 did, and the session's KV with a
// tail, stored without a tail hash.
void make_version_2_store(const std::string& path) {
  make_version_1_store(path);
  RawDb raw(path);
  raw.exec(std::string(revision_schema_v2()));
  raw.exec("INSERT INTO prefix_blocks VALUES (7, x'0102')");
  raw.exec("INSERT INTO kv_sessions (session_id, model_fingerprint, kv_type, n_tokens, tail_blob)"
           " VALUES ('s', 0, 1, 20, x'0304')");
  raw.exec("INSERT INTO kv_block_refs VALUES ('s', 0, 7)");
  raw.exec("PRAGMA user_version = 2");
}

}  // namespace

// Version 3 adds kv_sessions.tail_hash. The tails version 2 stored (and the ones it still
// writes, naming its columns) have none: not known, so never taken for a conversation.
TEST_CASE("store migration: a version 2 file gets tail hashes, NULL for its stored tails") {
  test::TempDir dir;
  const std::string path = (dir / "v2.db").string();
  make_version_2_store(path);
  {
    Store store(path);
    CHECK(store.load_turns("s").size() == 1);
    const auto kv = store.load_kv("s");
    REQUIRE(kv.has_value());
    CHECK(kv->n_tokens == 20);
    CHECK(kv->full_block_hashes == std::vector<uint64_t>{7});
    CHECK(kv->tail_blob.size() == 2);
    CHECK_FALSE(kv->tail_hash.has_value());
    StoredKv hashed = *kv;
    hashed.tail_hash = 0xF00DF00DF00DF00Dull;  // above 2^63: the bit-cast to INTEGER
    store.save_kv("s", hashed, {});
    CHECK(store.load_kv("s")->tail_hash == 0xF00DF00DF00DF00Dull);
  }
  RawDb raw(path);
  CHECK(raw.int64("PRAGMA user_version") == 3);
  // Version 1 and 2 code can still use the file: the column may stay NULL.
  CHECK(raw.int64("SELECT value FROM meta WHERE key = 'compatible_version'") == 1);
  raw.exec("DELETE FROM kv_sessions");
  raw.exec("INSERT INTO kv_sessions (session_id, model_fingerprint, kv_type, n_tokens, tail_blob)"
           " VALUES ('s', 0, 1, 4, x'05')");  // as version 2 writes
  Store store(path);
  const auto kv = store.load_kv("s");
  REQUIRE(kv.has_value());
  CHECK(kv->n_tokens == 4);
  CHECK_FALSE(kv->tail_hash.has_value());
}

TEST_CASE("store migration: a newer file that is still compatible opens and works") {
  test::TempDir dir;
  const std::string path = (dir / "newer.db").string();
  make_store_with_turns(path);
  {
    // What a later Parley might do: a new column, a new table, a higher user_version, and
    // compatible_version left at 1 because older code can still use the file.
    RawDb raw(path);
    raw.exec("ALTER TABLE sessions ADD COLUMN title TEXT");
    raw.exec("CREATE TABLE attachments (id INTEGER PRIMARY KEY, data BLOB)");
    raw.exec("PRAGMA user_version = 7");
  }
  {
    Store store(path);
    CHECK(store.load_turns("s").size() == 3);
    append_turns(store, "s", 3, std::vector{StoredTurn{1, "still works", {9}, true}});
    store.create_session(session_named("t", 5));
  }
  RawDb raw(path);
  CHECK(raw.int64("PRAGMA user_version") == 7);  // never migrated "down"
  CHECK(raw.int64("SELECT n_turns FROM sessions WHERE id = 's'") == 4);
}

TEST_CASE("store migration: a file that needs a newer Parley is refused and left alone") {
  test::TempDir dir;
  const std::string path = (dir / "future.db").string();
  make_store_with_turns(path);
  {
    RawDb raw(path);
    raw.exec("PRAGMA user_version = 4");
    raw.exec("UPDATE meta SET value = 4 WHERE key = 'compatible_version'");
  }
  const Error e = error_opening(path);
  CHECK(e.status() == Status::corrupt);
  CHECK(std::string(e.what()).find("newer Parley") != std::string::npos);
  RawDb raw(path);
  CHECK(raw.int64("PRAGMA user_version") == 4);
  CHECK(raw.int64("SELECT count(*) FROM turns") == 3);
}

TEST_CASE("store: another program's SQLite file is refused, not taken over") {
  test::TempDir dir;
  SUBCASE("another application_id") {
    const std::string path = (dir / "other.db").string();
    {
      RawDb raw(path);
      raw.exec("PRAGMA application_id = 42");
      raw.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY)");
    }
    const Error e = error_opening(path);
    CHECK(e.status() == Status::corrupt);
    CHECK(std::string(e.what()).find("not a Parley store") != std::string::npos);
    CHECK(RawDb(path).int64("SELECT count(*) FROM sqlite_schema") == 1);
  }
  SUBCASE("no application_id, but tables of its own") {
    const std::string path = (dir / "plain.db").string();
    RawDb(path).exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me')");
    const Error e = error_opening(path);
    CHECK(e.status() == Status::corrupt);
    CHECK(std::string(e.what()).find("not a Parley store") != std::string::npos);
    CHECK(RawDb(path).text("SELECT text FROM notes") == "keep me");
  }
  CHECK(files_in(dir.path()) == 1);  // nothing moved aside, nothing created
}

TEST_CASE("store: a row that cannot be read back is Error(corrupt), not a wrong transcript") {
  test::TempDir dir;
  const std::string path = (dir / "rows.db").string();
  make_store_with_turns(path);
  std::string damage;
  SUBCASE("a token blob whose length is not a multiple of 4") {
    damage = "UPDATE turns SET token_ids = x'0102030405' WHERE idx = 1";
  }
  SUBCASE("token ids stored as text") {
    damage = "UPDATE turns SET token_ids = 'abcd' WHERE idx = 1";
  }
  SUBCASE("a gap in the indexes") { damage = "DELETE FROM turns WHERE idx = 1"; }
  SUBCASE("an index moved past the end") { damage = "UPDATE turns SET idx = 9 WHERE idx = 1"; }
  SUBCASE("an unknown role") { damage = "UPDATE turns SET role = 7 WHERE idx = 2"; }
  SUBCASE("a turn count that promises more turns") { damage = "UPDATE sessions SET n_turns = 5"; }
  SUBCASE("an extra turn past the count") {
    damage = "INSERT INTO turns VALUES ('s', 3, 1, 'extra', x'', 1)";
  }
  CAPTURE(damage);
  RawDb(path).exec(damage);
  Store store(path);
  CHECK_FALSE(store.recovery().has_value());  // the file itself is sound
  CHECK(store.load_session("s").has_value());
  try {
    store.load_turns("s");
    FAIL("load_turns must refuse a damaged transcript");
  } catch (const Error& e) {
    CHECK(e.status() == Status::corrupt);
  }
}

TEST_CASE("store: a path in a missing folder is Error(storage) naming the folder") {
  test::TempDir dir;
  const std::string folder = (dir / "missing-dir").string();
  const Error e = error_opening(folder + "/chat.db");
  CHECK(e.status() == Status::storage);
  CHECK(std::string(e.what()).find("the store file " + folder + "/chat.db cannot be created: its "
                                   "folder " + folder + " does not exist") != std::string::npos);
  CHECK(!std::filesystem::exists(folder));
}

TEST_CASE("store: a folder, or a link to nothing, as the store path is Error(storage) saying so") {
  test::TempDir dir;
  const Error folder = error_opening(dir.path().string());
  CHECK(folder.status() == Status::storage);
  CHECK(std::string(folder.what()).find("is a folder: give the path of a file in it") !=
        std::string::npos);

  const std::string link = (dir / "chat.db").string();
  std::filesystem::create_symlink(dir / "nowhere" / "chat.db", link);
  const Error dangling = error_opening(link);
  CHECK(dangling.status() == Status::storage);
  CHECK(std::string(dangling.what()).find("is a symbolic link to " +
                                          (dir / "nowhere" / "chat.db").string() +
                                          ", which does not exist") != std::string::npos);
}

// A store the process may not write is refused at once, naming the file or folder, and left
// as it is.
TEST_CASE("store: a file or folder that cannot be written is Error(storage) naming it") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  { Store store(path); }
  const auto bytes = std::filesystem::file_size(path);
  hand_over(dir.path());
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);
  std::optional<std::string> message = error_opening_unprivileged(path);
  if (!message) {
    MESSAGE("skipped: permissions do not apply to root, which cannot become nobody here");
    return;
  }
  CHECK(message->find("the store file " + path + " cannot be written") != std::string::npos);
  CHECK(std::filesystem::file_size(path) == bytes);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);

  const auto folder = dir / "read-only";
  std::filesystem::create_directory(folder);
  hand_over(dir.path());
  std::filesystem::permissions(folder, std::filesystem::perms::owner_read |
                                           std::filesystem::perms::owner_exec);
  message = error_opening_unprivileged((folder / "chat.db").string());
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
  CHECK(message.value_or("").find("the store folder " + folder.string() + " cannot be written") !=
        std::string::npos);
  CHECK(error_opening(dir.path().string()).status() == Status::storage);  // (a folder)
}

// A run that ended without closing the store, as another user, leaves companions this one
// cannot write: SQLite would read the store through them and refuse every turn.
TEST_CASE("store: a -wal or -shm companion that cannot be written is Error(storage) naming it") {
  for (const char* suffix : {"-wal", "-shm"}) {
    CAPTURE(suffix);
    test::TempDir dir;
    const std::string path = (dir / "chat.db").string();
    { Store store(path); }
    const std::string companion = path + suffix;
    std::ofstream(companion).close();
    hand_over(dir.path());
    std::filesystem::permissions(companion, std::filesystem::perms::owner_read |
                                                std::filesystem::perms::group_read |
                                                std::filesystem::perms::others_read);
    if (::geteuid() == 0) REQUIRE(::chown(companion.c_str(), 0, 0) == 0);  // root's, as left
    const std::optional<std::string> message = error_opening_unprivileged(path);
    if (!message) {
      MESSAGE("skipped: permissions do not apply to root, which cannot become nobody here");
      return;
    }
    CHECK(message->find("the store companion file " + companion + " cannot be written") !=
          std::string::npos);
    std::filesystem::permissions(companion, std::filesystem::perms::owner_all);
    std::filesystem::remove(companion);
    CHECK(error_opening_unprivileged(path) == "");  // the same store, companions gone
  }
}

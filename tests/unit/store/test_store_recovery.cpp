// A store file that fails its integrity check is never deleted: it is moved aside, and every
// transcript that can still be read is copied into a fresh store. The damage here is real:
// pages of a closed file are overwritten with garbage, and plain SQLite confirms that
// quick_check fails before the store sees the file.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "append_turns.h"
#include "common/error.h"
#include "common/log.h"
#include "store/recovery.h"
#include "store/store.h"
#include "support/faulty_vfs.h"
#include "support/shared_assets.h"
#include "support/stored_session.h"

using namespace parley;
using namespace parley::store;
namespace fs = std::filesystem;

namespace {

constexpr int kSessions = 240;
constexpr int kTurnsPerSession = 4;

std::string session_id(int i) { return "session-" + std::to_string(i); }
// Long enough that the sessions table spans several pages.
std::string prompt_of(int i) { return "prompt " + std::to_string(i) + std::string(300, 'p'); }

std::vector<StoredTurn> turns_of(int session) {
  std::vector<StoredTurn> turns;
  for (int t = 0; t < kTurnsPerSession; ++t) {
    StoredTurn turn;
    turn.role = t == 0 ? 0 : 1 + (t + 1) % 2;
    turn.text = "session " + std::to_string(session) + " turn " + std::to_string(t) + " " +
                std::string(200 + static_cast<size_t>(session % 50), static_cast<char>('a' + t));
    turn.token_ids = {session, t, session * 100 + t};
    turns.push_back(turn);
  }
  return turns;
}

void fill_store(const std::string& path) {
  Store store(path);
  for (int i = 0; i < kSessions; ++i) {
    StoredSession s;
    s.id = session_id(i);
    s.chat_template = "raw";
    s.system_prompt = prompt_of(i);
    s.created_ms = 1000 + i;
    s.updated_ms = 1000 + i;
    store.create_session(s);
    append_turns(store, s.id, 0, turns_of(i));
  }
}

// A plain SQLite connection that leaves the file as it found it (no checkpoint on close).
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  ~RawDb() { sqlite3_close(db_); }
  std::vector<int64_t> column(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
    std::vector<int64_t> values;
    while (sqlite3_step(statement) == SQLITE_ROW)
      values.push_back(sqlite3_column_int64(statement, 0));
    sqlite3_finalize(statement);
    return values;
  }
  // quick_check's first line, or SQLite's error when the check cannot even run.
  std::string quick_check() {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA quick_check", -1, &statement, nullptr) != SQLITE_OK) {
      return sqlite3_errmsg(db_);
    }
    std::string verdict = sqlite3_step(statement) == SQLITE_ROW
                              ? reinterpret_cast<const char*>(sqlite3_column_text(statement, 0))
                              : sqlite3_errmsg(db_);
    sqlite3_finalize(statement);
    return verdict;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Leaf pages of one table, in key order (dbstat walks the b-tree).
std::vector<int64_t> leaf_pages_of(const std::string& path, const std::string& table) {
  return RawDb(path).column("SELECT pageno FROM dbstat WHERE name = '" + table +
                            "' AND pagetype = 'leaf' ORDER BY path");
}

void overwrite_page(const std::string& path, int64_t page_number, uint32_t seed) {
  constexpr size_t kPageSize = 16384;
  std::mt19937 random(seed);
  std::string garbage(kPageSize, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  garbage[0] = static_cast<char>(0xA5);  // never a valid b-tree page type
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(file.good());
  file.seekp(static_cast<std::streamoff>((page_number - 1) * static_cast<int64_t>(kPageSize)));
  file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  REQUIRE(file.good());
}

std::string contents_of(const std::string& path) {
  std::string bytes(fs::file_size(path), '\0');
  std::ifstream file(path, std::ios::binary);
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

void check_same_turns(const std::vector<StoredTurn>& got, const std::vector<StoredTurn>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].role == want[i].role);
    CHECK(got[i].text == want[i].text);
    CHECK(got[i].token_ids == want[i].token_ids);
  }
}

int index_of(const std::string& id) { return std::stoi(id.substr(std::string("session-").size())); }

// Collects warnings while alive. The log sink is installed once for the whole program (the
// log keeps each sink it was given alive on purpose) and prints when no capture is active.
class WarningCapture {
 public:
  WarningCapture() {
    static const bool installed = (log::set_sink(&WarningCapture::sink, nullptr), true);
    (void)installed;
    active_ = this;
  }
  ~WarningCapture() { active_ = nullptr; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  static void sink(int level, const char* message, void*) {
    if (active_ && level == log::warn) {
      active_->lines_.emplace_back(message);
    } else if (level <= log::warn) {
      std::fprintf(stderr, "parley: %s\n", message);
    }
  }
  static inline WarningCapture* active_ = nullptr;
  std::vector<std::string> lines_;
};

}  // namespace

TEST_CASE("store recovery: damaged turns pages: the file is kept, the rest is copied") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  const auto turn_pages = leaf_pages_of(path, "turns");
  REQUIRE(turn_pages.size() >= 10);
  overwrite_page(path, turn_pages[turn_pages.size() / 2], 1);
  overwrite_page(path, turn_pages[turn_pages.size() / 2 + 3], 2);
  const std::string verdict = RawDb(path).quick_check();
  INFO("quick_check on the damaged file: " << verdict);
  REQUIRE(verdict != "ok");
  const std::string damaged_bytes = contents_of(path);

  WarningCapture warnings;
  Store store(path);
  REQUIRE(store.recovery().has_value());
  const RecoveryReport& report = *store.recovery();
  // The application hears about it through the log.
  CHECK(std::any_of(warnings.lines().begin(), warnings.lines().end(), [&](const std::string& line) {
    return line.find(report.moved_aside_to) != std::string::npos &&
           line.find("truncated " + std::to_string(report.truncated.size())) != std::string::npos;
  }));
  INFO("recovered " << report.recovered.size() << ", truncated " << report.truncated.size()
                    << ", lost " << report.lost.size());

  // The damaged file is kept, byte for byte, under the reported name.
  REQUIRE(fs::exists(report.moved_aside_to));
  CHECK(report.moved_aside_to.find(path + ".corrupt-") == 0);
  CHECK(contents_of(report.moved_aside_to) == damaged_bytes);

  // Session rows were intact: every session is accounted for, and none is lost.
  CHECK(report.all_listed);
  CHECK(report.lost.empty());
  CHECK(report.recovered.size() + report.truncated.size() == kSessions);
  CHECK(report.truncated.size() > 0);  // the damaged pages held some turns
  CHECK(report.recovered.size() > kSessions / 2);

  // What was copied is exactly what was written: whole transcripts, or a prefix of one.
  for (const std::string& id : report.recovered) {
    CAPTURE(id);
    check_same_turns(store.load_turns(id), turns_of(index_of(id)));
    CHECK(store.load_session(id)->system_prompt == prompt_of(index_of(id)));
  }
  for (const std::string& id : report.truncated) {
    CAPTURE(id);
    const auto got = store.load_turns(id);
    auto want = turns_of(index_of(id));
    REQUIRE(got.size() < want.size());
    want.resize(got.size());
    check_same_turns(got, want);
  }
  CHECK(store.list_sessions().size() == kSessions);

  // The new store is sound and usable, and opens again without recovery.
  append_turns(store, report.recovered.front(), kTurnsPerSession,
               std::vector{StoredTurn{1, "after recovery", {1}, true}});
  CHECK(RawDb(path).quick_check() == "ok");
}

TEST_CASE("store recovery: sessions whose rows are damaged are reported lost") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  const auto session_pages = leaf_pages_of(path, "sessions");
  REQUIRE(session_pages.size() >= 3);
  overwrite_page(path, session_pages[1], 3);
  REQUIRE(RawDb(path).quick_check() != "ok");

  WarningCapture warnings;
  Store store(path);
  REQUIRE(store.recovery().has_value());
  const RecoveryReport& report = *store.recovery();
  CHECK(report.lost.size() > 0);
  CHECK(report.recovered.size() > 0);
  // The warning names the lost conversations (the first ten of them).
  const auto named = [&](const std::string& id) {
    const auto& lines = warnings.lines();
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find("lost " + std::to_string(report.lost.size()) + " (") != std::string::npos &&
             l.find(id) != std::string::npos;
    });
  };
  for (size_t i = 0; i < report.lost.size() && i < 10; ++i) {
    CHECK_MESSAGE(named(report.lost[i]), report.lost[i]);
  }
  // Lost ids are still named: they were found through the intact index and turns.
  CHECK(report.all_listed);
  CHECK(report.lost.size() + report.recovered.size() + report.truncated.size() == kSessions);
  const std::vector<std::string> ids = store.list_sessions();
  const std::set<std::string> listed(ids.begin(), ids.end());
  for (const std::string& id : report.lost) CHECK(listed.count(id) == 0);
  for (const std::string& id : report.recovered) {
    CAPTURE(id);
    check_same_turns(store.load_turns(id), turns_of(index_of(id)));
  }
}

TEST_CASE("store recovery: with the sessions table and its index damaged, losses are unknown") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  const auto session_pages = leaf_pages_of(path, "sessions");
  const auto index_pages = leaf_pages_of(path, "sqlite_autoindex_sessions_1");
  REQUIRE(session_pages.size() >= 3);
  REQUIRE(!index_pages.empty());
  overwrite_page(path, session_pages[1], 5);
  overwrite_page(path, index_pages.front(), 6);
  REQUIRE(RawDb(path).quick_check() != "ok");

  WarningCapture warnings;
  Store store(path);
  REQUIRE(store.recovery().has_value());
  const RecoveryReport& report = *store.recovery();
  CHECK_FALSE(report.all_listed);
  CHECK(report.recovered.size() + report.truncated.size() < kSessions);
  // The warning does not claim to know how many were lost.
  CHECK(std::any_of(warnings.lines().begin(), warnings.lines().end(), [](const std::string& l) {
    return l.find("how many were lost is not known") != std::string::npos;
  }));
}

TEST_CASE("describe_recovery names the sessions truncated and lost, the first ten of each") {
  RecoveryReport report;
  report.moved_aside_to = "chat.db.corrupt-1";
  report.recovered = {"r1", "r2"};
  report.truncated = {"t1"};
  for (int i = 0; i < 12; ++i) report.lost.push_back("l" + std::to_string(i));
  CHECK(describe_recovery("chat.db", report) ==
        "session store chat.db: recovered 2 sessions, truncated 1 ('t1'), lost 12 ('l0', 'l1', "
        "'l2', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8', 'l9', ... and 2 more); the damaged file is "
        "chat.db.corrupt-1");
  report = RecoveryReport{};
  report.moved_aside_to = "chat.db.corrupt-2";
  CHECK(describe_recovery("chat.db", report) ==
        "session store chat.db: recovered 0 sessions, truncated 0, lost 0; the damaged file is "
        "chat.db.corrupt-2");
  report.all_listed = false;  // the sessions table is damaged: what it held is not known
  CHECK(describe_recovery("chat.db", report) ==
        "session store chat.db: recovered 0 sessions, truncated 0, lost 0 and perhaps more: the "
        "list of sessions cannot be read whole, so how many were lost is not known; the damaged "
        "file is chat.db.corrupt-2");
  report.unreadable = "file is not a database";
  CHECK(describe_recovery("chat.db", report) ==
        "session store chat.db: the damaged file cannot be read at all (file is not a "
        "database): no conversation could be copied; the damaged file is chat.db.corrupt-2");
}

TEST_CASE("store recovery: a file that is not a database at all is refused and left alone") {
  // Likely a wrong path (a document, a model file): taking it over would be worse than failing.
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "this is not a database, line " + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << text;

  try {
    Store store(path);
    FAIL("a file that is not a database must be refused");
  } catch (const Error& e) {
    CHECK(e.status() == Status::corrupt);
    CHECK(std::string(e.what()).find("not a Parley store") != std::string::npos);
  }
  CHECK(contents_of(path) == text);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("store recovery: the WAL moves aside with its file, and its commits are recovered") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  const std::string copy = (dir / "copy.db").string();
  fill_store(path);  // closed cleanly: everything is in the main file
  {
    // Commits that stay in the WAL, then a copy of the files as a crash would leave them.
    Store store(path);
    StoredSession s;
    s.id = "only-in-wal";
    s.created_ms = 99999;
    store.create_session(s);
    append_turns(store, s.id, 0, std::vector{StoredTurn{1, "wal turn", {7, 8}, true}});
    REQUIRE(fs::exists(path + "-wal"));
    fs::copy_file(path, copy);
    fs::copy_file(path + "-wal", copy + "-wal");
  }
  const auto turn_pages = leaf_pages_of(copy, "turns");
  overwrite_page(copy, turn_pages[turn_pages.size() / 3], 4);
  const std::string damaged_wal = contents_of(copy + "-wal");

  Store store(copy);
  REQUIRE(store.recovery().has_value());
  const std::string aside = store.recovery()->moved_aside_to;
  CHECK(fs::exists(aside + "-wal"));
  CHECK(contents_of(aside + "-wal") == damaged_wal);
  CHECK_FALSE(fs::exists(aside + "-shm"));  // an index of the WAL, rebuilt by any reader
  const auto& recovered = store.recovery()->recovered;
  CHECK(std::find(recovered.begin(), recovered.end(), "only-in-wal") != recovered.end());
  REQUIRE(store.load_turns("only-in-wal").size() == 1);
  CHECK(store.load_turns("only-in-wal")[0].text == "wal turn");
}

// A file shorter than its header says (a copy cut short, a full disk): SQLite refuses it
// whole as malformed, yet the pages that are there still hold most transcripts.
TEST_CASE("store recovery: a truncated file still gives up the transcripts it holds") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  fs::resize_file(path, fs::file_size(path) * 3 / 4 + 1000);  // not on a page boundary
  Store store(path);
  REQUIRE(store.recovery().has_value());
  const RecoveryReport& report = *store.recovery();
  INFO("recovered " << report.recovered.size() << ", truncated " << report.truncated.size()
                    << ", lost " << report.lost.size() << "; " << report.unreadable);
  CHECK(report.recovered.size() > kSessions / 4);
  for (const std::string& id : report.recovered) {
    CAPTURE(id);
    check_same_turns(store.load_turns(id), turns_of(index_of(id)));
  }
}

TEST_CASE("store recovery: no -wal or -shm of the salvage is left beside the damaged file") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);  // closed cleanly: no WAL
  const auto turn_pages = leaf_pages_of(path, "turns");
  overwrite_page(path, turn_pages[turn_pages.size() / 2], 5);
  std::string aside;
  {
    Store store(path);
    REQUIRE(store.recovery().has_value());
    aside = store.recovery()->moved_aside_to;
  }
  CHECK(fs::exists(aside));
  CHECK_FALSE(fs::exists(aside + "-wal"));
  CHECK_FALSE(fs::exists(aside + "-shm"));
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    names.insert(entry.path().filename().string());
  }
  CHECK(names == std::set<std::string>{"chat.db", fs::path(aside).filename().string()});
}

// Another process's recovery renames the file aside and makes a new one at its path while
// this store still has the old one open: its commits must not go on into the renamed file.
TEST_CASE("store: a file moved aside, replaced or deleted while open refuses writes: STORAGE") {
  test::TempDir dir;
  const auto open_with_a_turn = [](const std::string& path) {
    auto store = std::make_unique<Store>(path);
    store->create_session(test::session_named("s"));
    append_turns(*store, "s", 0, std::vector{StoredTurn{1, "kept", {2}, true}});
    return store;
  };
  const auto expect_refused = [](Store& store, const std::string& path) {
    try {
      append_turns(store, "s", 1, std::vector{StoredTurn{1, "lost?", {3}, true}});
      FAIL("the write must be refused");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
      CHECK(std::string(e.what()).find("moved, replaced or deleted") != std::string::npos);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
    CHECK(store.load_turns("s").size() == 1);  // reads still see the old file
  };
  SUBCASE("moved aside and replaced, as another process's recovery does") {
    const std::string path = (dir / "moved.db").string();
    auto mine = open_with_a_turn(path);
    move_aside(path);
    Store fresh(path);
    expect_refused(*mine, path);
    CHECK(fresh.list_sessions().empty());
  }
  SUBCASE("deleted") {
    const std::string path = (dir / "deleted.db").string();
    auto mine = open_with_a_turn(path);
    fs::remove(path);
    expect_refused(*mine, path);
  }
}

namespace {

// The files of a folder, by name.
std::set<std::string> names_in(const fs::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// A store of kSessions sessions whose turns pages are damaged: every session can be recovered.
std::string damaged_store_in(const test::TempDir& dir) {
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  const auto turn_pages = leaf_pages_of(path, "turns");
  overwrite_page(path, turn_pages[turn_pages.size() / 2], 6);
  REQUIRE(RawDb(path).quick_check() != "ok");
  return path;
}

}  // namespace

// The copy is made beside the damaged file, which stays in place until the copy replaces it.
TEST_CASE("store recovery: a copy cut short leaves the damaged file whole; the next open "
          "recovers it") {
  test::TempDir dir;
  const std::string path = damaged_store_in(dir);
  const std::string damaged_bytes = contents_of(path);
  {
    test::FaultyVfs vfs("parley-faulty-recovery");
    vfs.fail_writes_after(64 * 1024, SQLITE_FULL);  // the disk fills during the copy
    try {
      Store store(path, StoreOptions{vfs.name()});
      FAIL("the recovery must fail");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
    }
    CHECK(vfs.failures() > 0);
  }
  CHECK(contents_of(path) == damaged_bytes);
  for (const std::string& name : names_in(dir.path())) {
    CAPTURE(name);
    CHECK(name.find(".corrupt-") == std::string::npos);     // not moved aside
    CHECK(name.find(".recovering-") == std::string::npos);  // no copy left behind
  }

  Store store(path);
  REQUIRE(store.recovery().has_value());
  CHECK(store.recovery()->recovered.size() + store.recovery()->truncated.size() == kSessions);
  CHECK(store.list_sessions().size() == kSessions);
}

// The copy is written through its WAL; closing it would fold that WAL into the file, but a
// close cannot fail: on a full disk the file renamed into place would be half written, its
// data left in the copy's -wal under a name the next open deletes.
TEST_CASE("store recovery: a copy its disk cannot hold whole is never put in place") {
  test::TempDir dir;
  const std::string path = damaged_store_in(dir);
  const std::string damaged_bytes = contents_of(path);
  constexpr uint64_t kDatabaseBytesBeforeTheCheckpoint = 128 * 1024;  // the copy's first pages
  REQUIRE(damaged_bytes.size() > 2 * kDatabaseBytesBeforeTheCheckpoint);
  {
    test::FaultyVfs vfs("parley-faulty-checkpoint");
    vfs.fail_writes_after(kDatabaseBytesBeforeTheCheckpoint, SQLITE_FULL,
                          test::FaultyVfs::Files::databases);
    WarningCapture warnings;
    try {
      Store store(path, StoreOptions{vfs.name()});
      FAIL("the recovery must fail");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
      const std::string message = e.what();
      CAPTURE(message);
      CHECK(message.find(path) != std::string::npos);
      CHECK(message.find("database or disk is full") != std::string::npos);
    }
    CHECK(vfs.failures() > 0);
    for (const std::string& line : warnings.lines()) {
      CAPTURE(line);
      CHECK(line.find("recovered") == std::string::npos);  // no success is announced
    }
  }
  CHECK(contents_of(path) == damaged_bytes);
  for (const std::string& name : names_in(dir.path())) {
    CAPTURE(name);
    CHECK(name.find(".corrupt-") == std::string::npos);     // not moved aside
    CHECK(name.find(".recovering-") == std::string::npos);  // no copy, nor its -wal
  }

  Store store(path);  // with room again
  REQUIRE(store.recovery().has_value());
  CHECK(store.recovery()->recovered.size() + store.recovery()->truncated.size() == kSessions);
  CHECK(store.list_sessions().size() == kSessions);
}

// Openers of a store that another connection is recovering wait for the copy: none sees a
// half-filled store, none recovers it a second time, and none fails.
TEST_CASE("store recovery: a store opened during its recovery is only ever seen whole") {
  test::TempDir dir;
  const std::string path = damaged_store_in(dir);
  std::atomic<bool> recovered{false};
  std::mutex mutex;
  std::vector<size_t> sizes_seen;
  std::vector<std::string> errors;
  const auto open_until_recovered = [&] {
    while (!recovered) {
      try {
        Store store(path);
        const size_t size = store.list_sessions().size();
        std::lock_guard lock(mutex);
        sizes_seen.push_back(size);
      } catch (const Error& e) {
        std::lock_guard lock(mutex);
        errors.emplace_back(e.what());
      }
    }
  };
  std::thread first(open_until_recovered), second(open_until_recovered);
  {
    Store store(path);
    CHECK(store.list_sessions().size() == kSessions);
  }
  recovered = true;
  first.join();
  second.join();
  CHECK(errors.empty());
  for (const std::string& error : errors) MESSAGE(error);
  MESSAGE(sizes_seen.size() << " opens during the recovery");
  for (size_t size : sizes_seen) CHECK(size == kSessions);
  size_t set_aside = 0;  // damaged files, not their companions
  for (const std::string& name : names_in(dir.path())) {
    const bool companion = name.find("-wal") != std::string::npos ||
                           name.find("-shm") != std::string::npos ||
                           name.find("-journal") != std::string::npos;
    set_aside += name.find(".corrupt-") != std::string::npos && !companion;
  }
  CHECK(set_aside == 1);
}

TEST_CASE("store recovery: copies left by a process that died while recovering are removed") {
  test::TempDir dir;
  const std::string path = damaged_store_in(dir);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  REQUIRE(waitpid(child, nullptr, 0) == child);  // its pid names no process now
  const std::string abandoned = path + ".recovering-" + std::to_string(child) + "-0";
  const std::string live = path + ".recovering-" + std::to_string(getpid()) + "-999";
  for (const std::string& name : {abandoned, abandoned + "-wal", live}) {
    std::ofstream(name) << "partial copy";
  }
  Store store(path);
  REQUIRE(store.recovery().has_value());
  CHECK_FALSE(fs::exists(abandoned));
  CHECK_FALSE(fs::exists(abandoned + "-wal"));
  CHECK(fs::exists(live));  // its process is alive: perhaps still copying
}

TEST_CASE("store recovery: a swap cut short once the copy is ready is finished by the next "
          "open, never begun anew as an empty store") {
  // The state a process killed between moving the damaged file aside and renaming its copy
  // into place leaves: no file at the store's path, the copy ready beside it, and the damaged
  // file's -wal still there (its move aside cut short too).
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  fill_store(path);
  fs::rename(path, ready_copy_name(path));
  std::ofstream(path + "-wal") << "the damaged file's WAL";
  Store store(path);
  CHECK_FALSE(store.recovery().has_value());
  CHECK(store.list_sessions().size() == size_t(kSessions));
  const auto turns = store.load_turns(session_id(7));
  REQUIRE(turns.size() == size_t(kTurnsPerSession));
  CHECK(turns.back().text == turns_of(7).back().text);
  CHECK_FALSE(fs::exists(ready_copy_name(path)));
  int asides = 0;  // the WAL went aside, whole
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (name.find(".corrupt-") == std::string::npos) continue;
    ++asides;
    CHECK(name.size() > 4);
    CHECK(name.substr(name.size() - 4) == "-wal");
    CHECK(contents_of(entry.path().string()) == "the damaged file's WAL");
  }
  CHECK(asides == 1);
}

TEST_CASE("store recovery: a copy made ready while the damaged file stayed is made again") {
  test::TempDir dir;
  const std::string path = damaged_store_in(dir);
  std::ofstream(ready_copy_name(path)) << "a copy from a recovery cut short";
  Store store(path);
  REQUIRE(store.recovery().has_value());
  CHECK(store.recovery()->recovered.size() + store.recovery()->truncated.size() ==
        size_t(kSessions));
  CHECK_FALSE(fs::exists(ready_copy_name(path)));
}

TEST_CASE("store: a -wal or -shm deleted while open refuses writes; what was committed stays") {
  for (const char* suffix : {"-wal", "-shm"}) {
    CAPTURE(suffix);
    test::TempDir dir;
    const std::string path = (dir / "chat.db").string();
    {
      Store store(path);
      store.create_session(test::session_named("s"));
      append_turns(store, "s", 0, std::vector{StoredTurn{1, "committed", {2}, true}});
      REQUIRE(fs::exists(path + "-wal"));
      fs::remove(path + "-wal");
      fs::remove(path + "-shm");
      fs::remove(path + std::string(suffix == std::string("-wal") ? "-shm" : "-wal"));
      try {
        append_turns(store, "s", 1, std::vector{StoredTurn{1, "into a lost WAL", {3}, true}});
        FAIL("the write must be refused");
      } catch (const Error& e) {
        CHECK(e.status() == Status::storage);
        CHECK(std::string(e.what()).find("was deleted or replaced while open") !=
              std::string::npos);
      }
    }  // closing checkpoints the WAL it still holds into the file: nobody else has the store
    Store reopened(path);
    const auto turns = reopened.load_turns("s");
    REQUIRE(turns.size() == 1);
    CHECK(turns[0].text == "committed");
  }
}

// A process still holding a file that recovery set aside closes it later: SQLite would then
// checkpoint and delete "<path>-wal" by name, by then the new file's WAL.
TEST_CASE("store: closing a file moved aside leaves the new file's -wal alone") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  auto old_file = std::make_unique<Store>(path);
  old_file->create_session(test::session_named("old"));
  move_aside(path);
  Store fresh(path);
  fresh.create_session(test::session_named("new"));
  append_turns(fresh, "new", 0, std::vector{StoredTurn{1, "in the new WAL", {2}, true}});
  REQUIRE(fs::exists(path + "-wal"));
  old_file.reset();
  CHECK(fs::exists(path + "-wal"));
  Store reader(path);  // another connection, reading through the WAL
  REQUIRE(reader.load_turns("new").size() == 1);
  CHECK(reader.load_turns("new")[0].text == "in the new WAL");
}

#include "store/store_open.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/log.h"
#include "store/folder_lock.h"
#include "store/migrations.h"
#include "store/recovery.h"

namespace parley::store {
namespace {

// Large pages write KV blobs several times faster than 4 KiB ones.
constexpr int kPageSize = 16384;
// SQLite moves the WAL into the database once it holds 1000 pages (16 MiB of these), and the
// file never shrinks: on a small volume the WAL alone would fill it, many times the data.
// Checkpointed at 1 MiB, the WAL is written again from its start; past a checkpoint it is cut
// back to 4 MiB (a larger transaction, a spill, still grows it for a while).
constexpr int64_t kWalCheckpointBytes = 1 << 20;
constexpr int64_t kWalKeptBytes = 4 << 20;

// The first complaint of PRAGMA quick_check, or nullopt when the file is sound.
std::optional<std::string> quick_check_complaint(Connection& db) {
  Statement check(db.handle(), "PRAGMA quick_check(1)", "quick_check");
  if (!check.step()) return "quick_check returned nothing";
  std::string verdict = check.text_at(0);
  if (verdict == "ok") return std::nullopt;
  std::replace(verdict.begin(), verdict.end(), '\n', ' ');  // one log line
  return verdict;
}

// Switches the file to WAL (a no-op when it is already). That needs the file to itself for a
// moment, and SQLite does not call the busy handler for it: when another process is opening
// the same new store right now, this waits for it as the busy timeout would.
void set_wal_mode(Connection& db, int busy_timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  for (;;) {
    try {
      Statement mode(db.handle(), "PRAGMA journal_mode = WAL", "set journal_mode");
      const std::string result = mode.step() ? mode.text_at(0) : "";
      require(result == "wal", Status::storage,
              "set journal_mode: SQLite kept journal mode '" + result + "' instead of WAL");
      return;
    } catch (const SqliteError& e) {
      if (e.primary_code() != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Per-connection settings; the file is already known to be a sound Parley store (or empty).
void configure(Connection& db, bool new_file, int busy_timeout_ms) {
  // The page size can only be chosen before the first table, and before WAL fixes it.
  if (new_file) db.exec("PRAGMA page_size = " + std::to_string(kPageSize), "set page_size");
  set_wal_mode(db, busy_timeout_ms);
  db.exec("PRAGMA foreign_keys = ON", "set foreign_keys");
  // Schema code (views, triggers, defaults) cannot call application functions.
  db.exec("PRAGMA trusted_schema = OFF", "set trusted_schema");
  // Catches a malformed page before it is used, at a small cost per page read.
  db.exec("PRAGMA cell_size_check = ON", "set cell_size_check");
  const int64_t page_size = db.query_int64("PRAGMA page_size", "read page_size");
  db.exec("PRAGMA wal_autocheckpoint = " +
              std::to_string(std::max<int64_t>(1, kWalCheckpointBytes / page_size)),
          "set wal_autocheckpoint");
  db.exec("PRAGMA journal_size_limit = " + std::to_string(kWalKeptBytes), "set journal_size_limit");
  db.set_synchronous(Synchronous::full);
}

// Why the file needs recovery, or nullopt. Errors that are not damage (I/O, locks) and foreign
// files (Error(corrupt) "not a Parley store") propagate.
std::optional<std::string> damage_of(Connection& db, const std::string& path,
                                     FileIdentity& identity) {
  try {
    identity = read_identity(db);
    require_parley_file(identity, path);
    if (identity.page_count == 0) return std::nullopt;
    return quick_check_complaint(db);
  } catch (const SqliteError& e) {
    if (!is_damaged_file_code(e.code())) throw;
    return std::string(e.what());
  }
}

std::unique_ptr<Connection> open_sound_file(const std::string& path, const StoreOptions& options,
                                            std::optional<std::string>& damage) {
  auto db = std::make_unique<Connection>(path, options.vfs, options.busy_timeout_ms);
  FileIdentity identity;
  damage = damage_of(*db, path, identity);
  if (damage) {
    db->leave_file_untouched_on_close();
    return nullptr;
  }
  configure(*db, identity.page_count == 0, options.busy_timeout_ms);
  migrate(*db);
  require_compatible_version(*db, path);
  db->watch_companions();
  return db;
}

// A file that has content but is not an SQLite database at all is most likely a wrong path;
// it is refused and left alone rather than moved aside and replaced.
void refuse_foreign_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // not there yet: SQLite creates it
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() == 0) return;  // empty: a new store
  static constexpr char kSqliteHeader[16] = "SQLite format 3";  // 15 chars and the NUL
  require(in.gcount() == sizeof header && std::memcmp(header, kSqliteHeader, 16) == 0,
          Status::corrupt, path + " is not a Parley store (not an SQLite database); left as it is");
}

// A store is written at every turn, and beside its file SQLite keeps the -wal and -shm
// companions: a file or folder this process may not write is refused by name here, where
// SQLite would say "attempt to write a readonly database" while reading the file's header.
void refuse_unwritable(const std::string& path) {
  const auto unwritable = [](const std::string& what, const std::string& where) {
    const int why = errno;  // access()'s, before anything else can change it
    fail(Status::storage, "the store " + what + " " + where + " cannot be written (" +
                              std::strerror(why) + "): a store is written at every turn");
  };
  std::error_code ec;
  require(!std::filesystem::is_directory(path, ec), Status::storage,
          "the store path " + path + " is a folder: give the path of a file in it");
  if (std::filesystem::is_symlink(path, ec) && !std::filesystem::exists(path, ec)) {
    fail(Status::storage, "the store path " + path + " is a symbolic link to " +
                              std::filesystem::read_symlink(path, ec).string() +
                              ", which does not exist");
  }
  if (std::filesystem::exists(path, ec) && ::access(path.c_str(), R_OK | W_OK) != 0) {
    unwritable("file", path);
  }
  // Left by a run that ended without closing the store (perhaps as another user): SQLite
  // would read the store through them, then refuse every write.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string companion = path + suffix;
    if (std::filesystem::exists(companion, ec) && ::access(companion.c_str(), R_OK | W_OK) != 0) {
      unwritable("companion file", companion);
    }
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::string dir = folder.empty() ? "." : folder.string();
  // The store file is created when missing, its folder is not (SQLite: "unable to open").
  require(std::filesystem::is_directory(dir, ec), Status::storage,
          "the store file " + path + " cannot be created: its folder " + dir +
              " does not exist (or is not a folder); a missing store file is created, not its "
              "folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) unwritable("folder", dir);
}

}  // namespace

OpenedStore open_store(const std::string& path, const StoreOptions& options) {
  refuse_foreign_file(path);
  refuse_unwritable(path);
  const OpenFreshStore open_fresh = [&](const std::string& copy) {
    std::optional<std::string> damage;
    auto db = open_sound_file(copy, options, damage);
    require(db != nullptr, Status::storage,
            "the new store " + copy + " is damaged: " + damage.value_or(""));
    return db;
  };
  OpenedStore opened;
  // Another process may recover the file between two tries; each try that finds it damaged
  // waits for that recovery, so a few tries are enough.
  constexpr int kTries = 4;
  for (int tries = 1;; ++tries) {
    if (finish_interrupted_recovery(path)) {
      log::warn_line("session store " + path + ": a recovery cut short before its copy took the "
                     "damaged file's place is finished: the copy " + ready_copy_name(path) +
                     " is now the store");
    }
    std::optional<std::string> damage;
    {
      FolderLock opening(path, FolderLock::shared);  // not while a recovery swaps files
      opened.db = open_sound_file(path, options, damage);
    }
    if (opened.db) return opened;
    require(!opened.recovery && tries < kTries, Status::storage,
            "the store " + path + " is still damaged after its recovery: " + *damage);
    log::warn_line("session store " + path + " failed its integrity check (" + *damage +
                   "); copying what can still be read into a new store");
    opened.recovery = recover_damaged_store(path, options, open_fresh);
    if (opened.recovery) log::warn_line(describe_recovery(path, *opened.recovery));
  }
}

}  // namespace parley::store

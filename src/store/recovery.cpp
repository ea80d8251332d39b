#include "store/recovery.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <system_error>

#include "common/shown_id.h"
#include "store/file_id.h"
#include "store/folder_lock.h"
#include "store/transcript_rows.h"

namespace parley::store {
namespace {

namespace fs = std::filesystem;
using transcript_rows::Lookup;
// The damaged file may be of an older version, without sessions.revision.
constexpr auto kSkip = transcript_rows::Revision::skip;

constexpr const char* kCompanionSuffixes[] = {"-wal", "-shm", "-journal"};

std::string unused_aside_name(const std::string& path) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string base =
      path + ".corrupt-" +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  std::string name = base;
  for (int n = 2;; ++n) {
    std::error_code ec;
    bool taken = fs::exists(name, ec);
    for (const char* suffix : kCompanionSuffixes) taken = taken || fs::exists(name + suffix, ec);
    if (!taken) return name;
    name = base + "-" + std::to_string(n);
  }
}

void rename_or_fail(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  require(!ec, Status::storage,
          "cannot move the damaged store " + from + " aside to " + to + ": " + ec.message());
}

// A read that fails on a damaged page is treated as "not readable", whichever way it failed.
template <class Read>
auto try_read(Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Through the index first, then by scanning the table: either b-tree may be the broken one.
std::optional<transcript_rows::SessionRow> read_session(Connection& db, const std::string& id) {
  const auto select = [&](Lookup lookup) {
    return try_read([&] { return transcript_rows::select_session(db, id, lookup, kSkip); });
  };
  auto row = select(Lookup::by_index);
  return row ? row : select(Lookup::by_table_scan);
}

std::optional<StoredTurn> read_turn(Connection& db, const std::string& id, int64_t idx) {
  auto turn = try_read([&] { return transcript_rows::select_turn(db, id, idx, Lookup::by_index); });
  if (turn) return turn;
  return try_read([&] { return transcript_rows::select_turn(db, id, idx, Lookup::by_table_scan); });
}

void copy_session(Connection& fresh, const StoredSession& session,
                  const std::vector<StoredTurn>& turns) {
  transcript_rows::insert_session(fresh, session);
  for (size_t i = 0; i < turns.size(); ++i) {
    transcript_rows::insert_turn(fresh, session.id, static_cast<int64_t>(i), turns[i]);
  }
  transcript_rows::update_turn_count(fresh, session.id, static_cast<int64_t>(turns.size()),
                                     session.updated_ms);
}

// Reading the damaged file without a checkpoint leaves a -shm beside it, and a -wal (empty
// when the file had none). The -shm is only an index any later reader rebuilds from the -wal,
// and an empty -wal holds nothing: neither is left behind. A -wal with frames is part of the
// damaged database and stays with it.
void remove_reader_leftovers(const std::string& path) {
  std::error_code ec;
  const std::string wal = path + "-wal";
  if (fs::is_regular_file(wal, ec) && fs::file_size(wal, ec) == 0 && !ec) fs::remove(wal, ec);
  fs::remove(path + "-shm", ec);
}

// The damaged file, read through a connection that writes nothing and checkpoints nothing,
// under its write lock where the file still allows one.
class DamagedFile {
 public:
  DamagedFile(const std::string& path, const StoreOptions& options, RecoveryReport& report) {
    try {
      db_.emplace(path, options.vfs, options.busy_timeout_ms);
      db_->leave_file_untouched_on_close();
      db_->tolerate_damaged_schema();  // nothing is written through this connection
    } catch (const Error& e) {
      report.unreadable = e.what();  // nothing can be read; the file itself is kept aside
      db_.reset();
      return;
    }
    try {
      db_->exec("BEGIN IMMEDIATE", "lock the damaged store against writers");
    } catch (const SqliteError& e) {
      if (e.primary_code() == SQLITE_BUSY) {
        busy_ = true;
      } else if (!is_damaged_file_code(e.code())) {
        throw;
      }  // too damaged to lock: read as it is
    }
  }
  ~DamagedFile() { close(); }
  DamagedFile(const DamagedFile&) = delete;
  DamagedFile& operator=(const DamagedFile&) = delete;

  Connection* connection() { return db_ ? &*db_ : nullptr; }
  // Another connection held the write lock past the busy timeout.
  bool busy() const { return busy_; }
  // Lets the lock go and closes the connection (SQLite deletes nothing: no checkpoint).
  void close() {
    if (db_ && db_->in_transaction()) {
      sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    db_.reset();
  }

 private:
  std::optional<Connection> db_;
  bool busy_ = false;
};

// The new store while it is made, beside the damaged one; removed (with what SQLite left
// beside it) unless it was put in place.
class CopyFile {
 public:
  explicit CopyFile(const std::string& store_path) : path_(unused_copy_name(store_path)) {}
  ~CopyFile() {
    if (kept_) return;
    std::error_code ec;
    fs::remove(path_, ec);
    for (const char* suffix : kCompanionSuffixes) fs::remove(path_ + suffix, ec);
  }
  CopyFile(const CopyFile&) = delete;
  CopyFile& operator=(const CopyFile&) = delete;

  const std::string& path() const { return path_; }
  void keep() { kept_ = true; }

  // "<store>.recovering-<pid>-<n>": the pid tells a copy abandoned by a process that died.
  static std::string prefix(const std::string& store_path) { return store_path + ".recovering-"; }

 private:
  static std::string unused_copy_name(const std::string& store_path) {
    static std::atomic<uint64_t> next{0};
    return prefix(store_path) + std::to_string(::getpid()) + "-" + std::to_string(next++);
  }
  std::string path_;
  bool kept_ = false;
};

// Copies whose process died mid-recovery (its file stayed damaged, and was recovered again).
void remove_abandoned_copies(const std::string& store_path) {
  const fs::path store(store_path);
  const fs::path folder = store.parent_path().empty() ? fs::path(".") : store.parent_path();
  const std::string prefix = fs::path(CopyFile::prefix(store_path)).filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos || digits > 9) continue;  // not a pid
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, digits)));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

// A rename is only durable once its folder is synced.
void sync_folder_of(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path();
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Undoes move_aside as far as it can, after the copy could not take the damaged file's place.
void move_back(const std::string& aside, const std::string& path) {
  std::error_code ec;
  fs::rename(aside, path, ec);
  for (const char* suffix : kCompanionSuffixes) {
    if (fs::exists(aside + suffix, ec)) fs::rename(aside + suffix, path + suffix, ec);
  }
}

void salvage_transcripts(Connection& damaged, Connection& fresh, RecoveryReport& report) {
  const auto salvaged = transcript_rows::salvage_session_ids(damaged);
  report.all_listed = salvaged.complete;
  for (const std::string& id : salvaged.ids) {
    const auto row = read_session(damaged, id);
    if (!row) {
      report.lost.push_back(id);
      continue;
    }
    std::vector<StoredTurn> turns;
    while (static_cast<int64_t>(turns.size()) < row->n_turns) {
      auto turn = read_turn(damaged, id, static_cast<int64_t>(turns.size()));
      if (!turn) break;  // a gap would make the rest meaningless: keep the readable prefix
      turns.push_back(std::move(*turn));
    }
    copy_session(fresh, row->session, turns);
    const bool complete = static_cast<int64_t>(turns.size()) == row->n_turns;
    (complete ? report.recovered : report.truncated).push_back(id);
  }
}

// The copy is written through its WAL. Closing would fold the WAL into the file, but a close
// cannot report failing to: on a full disk the file renamed into place would be half written,
// its data left behind in "<copy>-wal". The WAL is folded in here, where a failure is seen.
void fold_wal_into_copy(Connection& fresh, const std::string& copy_path) {
  int frames = 0;
  int folded = 0;
  if (sqlite3_wal_checkpoint_v2(fresh.handle(), "main", SQLITE_CHECKPOINT_TRUNCATE, &frames,
                                &folded) != SQLITE_OK) {
    throw_sqlite_error(fresh.handle(), "the damaged store is left as it is: its recovered copy " +
                                           copy_path + " cannot be written whole (checkpoint)");
  }
  require(frames == folded, Status::storage,
          "the damaged store is left as it is: its recovered copy " + copy_path +
              " cannot be written whole (" + std::to_string(frames - folded) +
              " WAL frames not checkpointed)");
}

// Once folded in, the copy's WAL is empty (and closing removes it): one still holding data
// would stay behind under the copy's name, away from the file renamed into place.
void require_copy_whole(const std::string& copy_path) {
  remove_reader_leftovers(copy_path);
  std::error_code ec;
  require(!fs::exists(copy_path + "-wal", ec) && !ec, Status::storage,
          "the damaged store is left as it is: its recovered copy " + copy_path +
              " still has data in its WAL once closed");
}

// "2 (a, b)" or, past kNamed ids, "40 (a, b, ... and 38 more)".
std::string count_and_ids(const std::vector<std::string>& ids) {
  constexpr size_t kNamed = 10;
  std::string text = std::to_string(ids.size());
  if (ids.empty()) return text;
  text += " (";
  for (size_t i = 0; i < ids.size() && i < kNamed; ++i) text += (i ? ", " : "") + shown_id(ids[i]);
  if (ids.size() > kNamed) text += ", ... and " + std::to_string(ids.size() - kNamed) + " more";
  return text + ")";
}

}  // namespace

std::string move_aside(const std::string& path) {
  const std::string aside = unused_aside_name(path);
  rename_or_fail(path, aside);
  for (const char* suffix : kCompanionSuffixes) {
    std::error_code ec;
    if (fs::exists(path + suffix, ec)) rename_or_fail(path + suffix, aside + suffix);
  }
  return aside;
}

std::string ready_copy_name(const std::string& path) { return path + ".recovered"; }

bool finish_interrupted_recovery(const std::string& path) {
  const std::string ready = ready_copy_name(path);
  std::error_code ec;
  if (!fs::exists(ready, ec)) return false;
  FolderLock swapping(path, FolderLock::exclusive);
  // Gone meanwhile (another process finished it), or the damaged file was never moved aside:
  // then the next recovery makes its copy again, in place of this one.
  if (!fs::exists(ready, ec) || fs::exists(path, ec)) return false;
  // The damaged file's companions, if its move aside was cut short between them: they go
  // aside too (their commits are in the copy), never beside the copy, whose file they are not.
  std::string aside;
  for (const char* suffix : kCompanionSuffixes) {
    if (!fs::exists(path + suffix, ec)) continue;
    if (aside.empty()) aside = unused_aside_name(path);
    rename_or_fail(path + suffix, aside + suffix);
  }
  rename_or_fail(ready, path);
  sync_folder_of(path);
  return true;
}

std::optional<RecoveryReport> recover_damaged_store(const std::string& path,
                                                    const StoreOptions& options,
                                                    const OpenFreshStore& open_fresh) {
  remove_abandoned_copies(path);
  // A recovery puts its copy in place only of the file it read.
  const auto damaged_identity = file_id_of(path);
  if (!damaged_identity) return std::nullopt;  // gone meanwhile: opening makes a new one
  RecoveryReport report;
  DamagedFile damaged(path, options, report);
  // Waiting for the lock may have been waiting for another process's recovery of it.
  if (file_id_of(path) != damaged_identity) return std::nullopt;
  require(!damaged.busy(), Status::storage,
          "cannot recover the damaged store " + path +
              ": another connection held its write lock past the busy timeout (another "
              "process recovering it?); open it again later");
  CopyFile copy(path);
  {
    const std::unique_ptr<Connection> fresh = open_fresh(copy.path());
    // One transaction: the copy is nobody else's, and is synced once.
    WriteTransaction transaction(*fresh);
    if (Connection* db = damaged.connection()) salvage_transcripts(*db, *fresh, report);
    transaction.commit();
    fold_wal_into_copy(*fresh, copy.path());
  }
  require_copy_whole(copy.path());
  {
    FolderLock swapping(path, FolderLock::exclusive);
    if (file_id_of(path) != damaged_identity) return std::nullopt;
    // The copy is named ready first: a process that dies once the damaged file is aside, and
    // before the copy is in place, leaves it where the next open puts it in place
    // (finish_interrupted_recovery), instead of beginning an empty store.
    const std::string ready = ready_copy_name(path);
    rename_or_fail(copy.path(), ready);
    sync_folder_of(path);
    try {
      report.moved_aside_to = move_aside(path);
    } catch (...) {
      std::error_code ignored;
      if (fs::exists(path, ignored)) fs::remove(ready, ignored);  // the damaged file stays
      throw;
    }
    std::error_code ec;
    fs::rename(ready, path, ec);
    if (ec) {
      move_back(report.moved_aside_to, path);
      std::error_code ignored;
      if (fs::exists(path, ignored)) fs::remove(ready, ignored);
      fail(Status::storage, "cannot put the recovered copy " + ready +
                                " in place of the damaged store " + path + ": " + ec.message());
    }
    sync_folder_of(path);
  }
  damaged.close();
  remove_reader_leftovers(report.moved_aside_to);
  return report;
}

std::string describe_recovery(const std::string& path, const RecoveryReport& report) {
  std::string line = "session store " + path + ": ";
  if (!report.unreadable.empty()) {
    line += "the damaged file cannot be read at all (" + report.unreadable +
            "): no conversation could be copied";
  } else {
    line += "recovered " + std::to_string(report.recovered.size()) + " sessions, truncated " +
            count_and_ids(report.truncated) + ", lost " + count_and_ids(report.lost);
    if (!report.all_listed) {
      line += " and perhaps more: the list of sessions cannot be read whole, so how many were "
              "lost is not known";
    }
  }
  return line + "; the damaged file is " + report.moved_aside_to;
}

}  // namespace parley::store

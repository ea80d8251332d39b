#include "store/connection.h"

#include "store/file_id.h"

namespace parley::store {

struct Connection::Companions {
  std::optional<FileId> wal;
  std::optional<FileId> shm;
};

Connection::Connection(const std::string& path, const std::string& vfs, int busy_timeout_ms)
    : path_(path) {
  // NOMUTEX: the Store's own mutex serializes calls, and also keeps sqlite3_errmsg tied to
  // the call that failed (SQLite's FULLMUTEX would not).
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    const int os_error = db_ ? os_error_of_failure(db_) : 0;
    const std::string text = db_ ? sqlite_message(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    throw SqliteError(rc, "cannot open " + path + ": " + text, os_error, text);
  }
  sqlite3_extended_result_codes(db_, 1);
  // DEFENSIVE: no statement can corrupt the file on purpose (writable_schema, ...).
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Connection::~Connection() {
  if (companions_ && !may_checkpoint_on_close()) leave_file_untouched_on_close();
  cache_.clear();  // finalize every statement, or sqlite3_close refuses
  sqlite3_close(db_);
}

void Connection::watch_companions() {
  companions_ = std::make_unique<Companions>(
      Companions{file_id_of(path_ + "-wal"), file_id_of(path_ + "-shm")});
}

bool Connection::file_moved() const {
  int moved = 0;
  // A VFS that cannot tell (SQLITE_NOTFOUND) leaves `moved` at 0.
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_HAS_MOVED, &moved);
  return moved != 0;
}

const char* Connection::changed_companion() const {
  if (!companions_) return nullptr;
  for (const auto& [suffix, id] :
       {std::pair{"-wal", companions_->wal}, std::pair{"-shm", companions_->shm}}) {
    if (id && file_id_of(path_ + suffix) != id) return suffix;
  }
  return nullptr;
}

std::string Connection::displacement() const {
  if (file_moved()) {
    return "the store file " + path_ +
           " was moved, replaced or deleted while open (another process's recovery may have "
           "set it aside)";
  }
  if (const char* suffix = changed_companion()) {
    return "the store's " + std::string(suffix + 1) + " file " + path_ + suffix +
           " was deleted or replaced while open (what was written since the last checkpoint "
           "is in it)";
  }
  return "";
}

bool Connection::may_checkpoint_on_close() const {
  if (file_moved()) return false;
  if (!changed_companion()) return true;
  // Both companions gone and none made since: the WAL this connection holds open is nobody
  // else's, and checkpointing it saves what it holds into the file, still in place.
  return !file_id_of(path_ + "-wal") && !file_id_of(path_ + "-shm");
}

void Connection::exec(std::string_view sql, std::string_view what) {
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    throw_sqlite_error(db_, what);
  }
}

int64_t Connection::query_int64(std::string_view sql, std::string_view what) {
  Statement statement(db_, sql, std::string(what));
  if (!statement.step()) fail(Status::storage, std::string(what) + ": no result");
  return statement.int64_at(0);
}

StatementLease Connection::statement(std::string_view sql, std::string_view what) {
  auto& slot = cache_[std::string(sql)];
  if (!slot) slot = std::make_unique<Statement>(db_, sql, std::string(what));
  return StatementLease(*slot);
}

void Connection::set_synchronous(Synchronous level) {
  if (synchronous_ == level) return;
  exec(level == Synchronous::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
       "set synchronous");
  synchronous_ = level;
}

void Connection::leave_file_untouched_on_close() {
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

void Connection::tolerate_damaged_schema() {
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 0, nullptr);
  exec("PRAGMA writable_schema = ON", "tolerate a damaged schema");
}

void Connection::require_file_in_place() {
  const std::string why = displacement();
  if (why.empty()) return;
  fail(Status::storage,
       why + ": nothing more is written to it; close the engine and open the store again");
}

WriteTransaction::WriteTransaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE", "begin transaction");
}

WriteTransaction::~WriteTransaction() {
  // SQLite may already have rolled back by itself (disk full, I/O error); ROLLBACK would
  // then fail harmlessly, so it is only sent while a transaction is open.
  if (!done_ && connection_.in_transaction()) {
    sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void WriteTransaction::commit() {
  // Checked last, under the write lock: a commit into a moved file would be lost silently.
  connection_.require_file_in_place();
  connection_.exec("COMMIT", "commit");
  done_ = true;
}

ReadTransaction::ReadTransaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN", "begin read transaction");
}

ReadTransaction::~ReadTransaction() {
  // Nothing was written: ending it either way releases the snapshot.
  if (connection_.in_transaction()) {
    sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

}  // namespace parley::store

// One SQLite connection: opening flags, per-connection settings, the statement cache, and
// write transactions (BEGIN IMMEDIATE ... COMMIT, rolled back unless committed).
// Thread-safety: none; the Store serializes every use.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "store/statement.h"

namespace parley::store {

// PRAGMA synchronous levels the store switches between.
enum class Synchronous { normal, full };

class Connection {
 public:
  // Opens (or creates) `path` through the VFS named `vfs` ("" = default). Never reads the
  // file: SQLite opens lazily, so a damaged file shows up on the first statement.
  Connection(const std::string& path, const std::string& vfs, int busy_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }

  // Runs SQL text (one or more statements; rows, if any, are ignored).
  void exec(std::string_view sql, std::string_view what);
  // The first column of the first row as an integer (for PRAGMA reads).
  int64_t query_int64(std::string_view sql, std::string_view what);
  // A prepared statement from this connection's cache, reset when the lease ends.
  StatementLease statement(std::string_view sql, std::string_view what);

  // Set outside transactions only (SQLite ignores a change inside one).
  void set_synchronous(Synchronous level);
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // Closing will not checkpoint the WAL into the file: a damaged file is left as found.
  void leave_file_untouched_on_close();
  // For reading a damaged file only: a schema entry SQLite finds malformed (a table's root
  // page past the end of a truncated file) no longer makes every statement fail, so the
  // tables that can be read still are. Lifts DEFENSIVE, which forbids writable_schema.
  void tolerate_damaged_schema();
  // Error(storage) when the file at the path opened is no longer the one this connection
  // writes (renamed aside by another process's recovery, replaced, deleted): commits would go
  // on into a file nobody opens again. After watch_companions(), also when its -wal or -shm
  // is no longer the one this connection uses: commits would go into a WAL that is lost at
  // close, or beside an index other connections no longer share.
  void require_file_in_place();
  // Remembers the -wal and -shm files of a store in WAL mode (call once it has been read).
  // Closing then checkpoints only into a file still in place and through its own WAL: a
  // checkpoint deletes "<path>-wal" by name, which may by then be another file's.
  void watch_companions();

 private:
  struct Companions;
  bool file_moved() const;
  // The companion ("-wal", "-shm") that is no longer the one watched; nullptr when none.
  const char* changed_companion() const;
  // Why the file or its companions are no longer this connection's; "" when they are.
  std::string displacement() const;
  bool may_checkpoint_on_close() const;

  sqlite3* db_ = nullptr;
  std::string path_;
  std::unique_ptr<Companions> companions_;  // set by watch_companions()
  std::unordered_map<std::string, std::unique_ptr<Statement>> cache_;
  std::optional<Synchronous> synchronous_;
};

// BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that reads first and
// writes later can fail with SQLITE_BUSY halfway, after the busy timeout cannot help any more.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection& connection);
  ~WriteTransaction();  // rolls back unless commit() succeeded
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  void commit();

 private:
  Connection& connection_;
  bool done_ = false;
};

// A consistent snapshot for reads that take more than one statement (a session row and its
// turns), even while another process writes.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& connection);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& connection_;
};

}  // namespace parley::store

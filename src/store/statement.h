// RAII prepared statement and the one way SQLite failures become parley::Error.
// Thread-safety: none; a statement belongs to its connection, which the Store serializes.
#pragma once

#include <sqlite3.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace parley::store {

// Error(storage) that remembers SQLite's extended result code, so the opening code can tell a
// damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) from a failing disk or a lock. SQLite running
// out of memory is Error(out_of_memory), as C++ allocations are.
class SqliteError : public Error {
 public:
  // `sqlite_text`: SQLite's own words for the failure (sqlite_message()), which `message`
  // holds after the name of what failed.
  SqliteError(int code, const std::string& message, int os_error = 0,
              std::string sqlite_text = "")
      : Error((code & 0xff) == SQLITE_NOMEM ? Status::out_of_memory : Status::storage, message),
        code_(code),
        os_error_(os_error),
        sqlite_text_(std::move(sqlite_text)) {}
  // The same failure, described by `message`.
  SqliteError reworded(const std::string& message) const {
    return SqliteError(code_, message, os_error_, sqlite_text_);
  }
  int code() const noexcept { return code_; }
  int primary_code() const noexcept { return code_ & 0xff; }
  int os_error() const noexcept { return os_error_; }  // os_error_of_failure()
  const std::string& sqlite_text() const noexcept { return sqlite_text_; }
  // The disk (or the process's file size limit, or a quota) had no room for a write.
  bool out_of_room() const noexcept {
    return primary_code() == SQLITE_FULL ||
           ((primary_code() == SQLITE_IOERR || primary_code() == SQLITE_CANTOPEN) &&
            (os_error_ == ENOSPC || os_error_ == EFBIG || os_error_ == EDQUOT));
  }

 private:
  int code_;
  int os_error_;
  std::string sqlite_text_;
};

// The OS error (errno) behind an I/O failure that just happened, read from the connection's
// VFS as SQLite itself reads it: SQLite keeps it (sqlite3_system_errno) after some failures
// only, a failed COMMIT not among them. 0 when the VFS has none to give.
inline int current_os_error(sqlite3* db) {
  sqlite3_vfs* vfs = nullptr;
  // Fails on a handle whose open failed; SQLite kept the error of that open.
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK || !vfs ||
      !vfs->xGetLastError) {
    return sqlite3_system_errno(db);
  }
  return vfs->xGetLastError(vfs, 0, nullptr);
}

// The OS error behind the failure that just happened when a system call failed (I/O, opening
// a file, a full disk), else 0: the one kept from an earlier call is not this failure's cause.
// SQLite's own out-of-memory during I/O comes from no system call.
inline int os_error_of_failure(sqlite3* db) {
  const int code = sqlite3_extended_errcode(db);
  const int primary = code & 0xff;
  const bool from_system_call = (primary == SQLITE_IOERR && code != SQLITE_IOERR_NOMEM) ||
                                primary == SQLITE_CANTOPEN || primary == SQLITE_FULL;
  return from_system_call ? current_os_error(db) : 0;
}

// SQLite's message for the failure that just happened, with the OS error behind an I/O
// failure: "disk I/O error" alone does not tell a full disk (ENOSPC), a file-size limit
// (EFBIG) and a failing disk (EIO) apart. Call it first, before anything can change errno.
inline std::string sqlite_message(sqlite3* db) {
  const int os_error = os_error_of_failure(db);
  std::string message = sqlite3_errmsg(db);
  // ("database or disk is full" says it already.)
  if (os_error != 0 && (sqlite3_extended_errcode(db) & 0xff) != SQLITE_FULL) {
    message += " (" + std::string(std::strerror(os_error)) + ")";
  }
  return message;
}

// "<what>: <SQLite's message>", read at once: a later call (even ROLLBACK) replaces it.
[[noreturn]] inline void throw_sqlite_error(sqlite3* db, std::string_view what) {
  const int os_error = os_error_of_failure(db);
  const std::string message = sqlite_message(db);
  throw SqliteError(sqlite3_extended_errcode(db), std::string(what) + ": " + message, os_error,
                    message);
}

inline bool is_damaged_file_code(int code) {
  const int primary = code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

class Statement {
 public:
  // `what` names the statement in error messages ("insert turn").
  Statement(sqlite3* db, std::string_view sql, std::string what) : db_(db), what_(std::move(what)) {
    // PERSISTENT: cached statements live as long as the connection.
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &stmt_, nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt_);
      throw_sqlite_error(db, "prepare " + what_);
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQL (?1, ?2, ...).
  Statement& bind_int64(int index, int64_t value) {
    check_bind(sqlite3_bind_int64(stmt_, index, value));
    return *this;
  }
  Statement& bind_null(int index) {
    check_bind(sqlite3_bind_null(stmt_, index));
    return *this;
  }
  Statement& bind_text(int index, std::string_view text) {
    // TRANSIENT: texts are small and often temporaries; SQLite copies them.
    check_bind(
        sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
  }
  // STATIC: no copy of large blobs. The bytes must outlive the next reset(), which clears the
  // bindings; StatementLease resets on scope exit, so a blob bound within that scope is safe.
  Statement& bind_blob(int index, std::span<const std::byte> bytes) {
    if (bytes.empty()) {
      // A null pointer would bind NULL, not an empty blob.
      check_bind(sqlite3_bind_zeroblob(stmt_, index, 0));
    } else {
      check_bind(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_STATIC));
    }
    return *this;
  }

  // true: a row is ready; false: done. Throws SqliteError on failure.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite_error(db_, what_);
  }
  // Runs a statement that returns no rows.
  void run() {
    while (step()) {
    }
  }
  // Back to the start, and forget every binding (so no STATIC blob is referenced any more).
  void reset() noexcept {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int column_type(int column) const { return sqlite3_column_type(stmt_, column); }
  bool is_null(int column) const { return column_type(column) == SQLITE_NULL; }

  // Typed getters, 0-based columns. A value of the wrong type means the file holds something
  // this code never wrote: Error(corrupt).
  int64_t int64_at(int column) const {
    require_type(column, SQLITE_INTEGER);
    return sqlite3_column_int64(stmt_, column);
  }
  std::string text_at(int column) const {
    require_type(column, SQLITE_TEXT);
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  // Valid until the next step() or reset().
  std::span<const std::byte> blob_at(int column) const {
    require_type(column, SQLITE_BLOB);
    const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(stmt_, column));
    return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
  }

  const std::string& what() const { return what_; }

 private:
  friend class StatementLease;

  void check_bind(int rc) {
    if (rc != SQLITE_OK) throw_sqlite_error(db_, "bind " + what_);
  }
  void require_type(int column, int type) const {
    const int actual = column_type(column);
    if (actual == type) return;
    fail(Status::corrupt, what_ + ": column " + std::to_string(column) + " of " +
                              sqlite3_column_name(stmt_, column) + " has an unexpected type");
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
  bool leased_ = false;
};

// A cached statement lent for one use: resets it (and clears its bindings) on scope exit.
class StatementLease {
 public:
  explicit StatementLease(Statement& statement) : statement_(&statement) {
    // One cursor per statement: a nested use of the same SQL would reset the outer one.
    require(!statement.leased_, Status::internal, "statement in use twice: " + statement.what_);
    statement.leased_ = true;
  }
  ~StatementLease() {
    statement_->reset();
    statement_->leased_ = false;
  }
  StatementLease(const StatementLease&) = delete;
  StatementLease& operator=(const StatementLease&) = delete;

  Statement* operator->() const { return statement_; }
  Statement& operator*() const { return *statement_; }

 private:
  Statement* statement_;
};

}  // namespace parley::store

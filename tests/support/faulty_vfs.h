// A SQLite VFS for tests: it forwards every call to the default VFS, and can be told to make
// xWrite, xSync or xTruncate fail with a chosen code (SQLITE_FULL for a full disk,
// SQLITE_IOERR_* for a failing one), and report an OS error for them (xGetLastError). A
// fault, once it fires, keeps firing until clear(), as a full disk stays full. Open a
// connection through it by its name (sqlite3_open_v2's zVfs, StoreOptions::vfs).
// Thread-safety: any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace parley::test {

class FaultyVfs {
 public:
  explicit FaultyVfs(std::string name);  // registers the VFS (never as the default)
  ~FaultyVfs();                          // unregisters it; close its connections first
  FaultyVfs(const FaultyVfs&) = delete;
  FaultyVfs& operator=(const FaultyVfs&) = delete;

  const std::string& name() const;

  // Which files a write fault counts and fails. A database file in WAL mode is written only
  // when it is created and by checkpoints: `databases` fails a checkpoint, not the commits.
  enum class Files { all, databases };

  // Writes succeed for `bytes` more bytes; the first write that does not fit, and every one
  // after it, fails with `code` and writes nothing. Writes to other files are not counted.
  void fail_writes_after(uint64_t bytes, int code, Files files = Files::all);
  void fail_syncs(int code);      // from the next xSync on
  void fail_truncates(int code);  // from the next xTruncate on
  // xGetLastError answers `error` (an errno value), as the default VFS answers the errno of
  // the call that failed.
  void report_os_error(int error);
  void clear();  // no faults any more, and no OS error

  uint64_t failures() const;   // calls failed on purpose so far
  uint64_t syncs() const;      // xSync calls that reached the VFS (any file)
  uint64_t wal_syncs() const;  // of which on a WAL file

  struct State;  // opaque; public only so the VFS callbacks can name it

 private:
  std::unique_ptr<State> state_;
};

}  // namespace parley::test

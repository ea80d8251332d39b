#include "support/faulty_vfs.h"

#include <sqlite3.h>

#include <mutex>
#include <optional>
#include <stdexcept>

namespace parley::test {

struct FaultyVfs::State {
  std::string name;
  sqlite3_vfs vfs{};            // ours, registered under `name`
  sqlite3_vfs* real = nullptr;  // the default VFS everything is forwarded to

  mutable std::mutex mutex;
  std::optional<int> write_code;  // armed write fault
  uint64_t write_budget = 0;      // bytes that still succeed
  bool databases_only = false;    // the write fault spares WAL and journal files
  std::optional<int> sync_code;
  std::optional<int> truncate_code;
  std::optional<int> os_error;
  uint64_t failures = 0;
  uint64_t syncs = 0;
  uint64_t wal_syncs = 0;

  int before_write(int amount, bool database) {
    std::lock_guard lock(mutex);
    if (!write_code || (databases_only && !database)) return SQLITE_OK;
    if (write_budget >= static_cast<uint64_t>(amount)) {
      write_budget -= static_cast<uint64_t>(amount);
      return SQLITE_OK;
    }
    write_budget = 0;
    ++failures;
    return *write_code;
  }
  int before_sync(bool wal) {
    std::lock_guard lock(mutex);
    ++syncs;
    if (wal) ++wal_syncs;
    if (!sync_code) return SQLITE_OK;
    ++failures;
    return *sync_code;
  }
  int before_truncate() {
    std::lock_guard lock(mutex);
    if (!truncate_code) return SQLITE_OK;
    ++failures;
    return *truncate_code;
  }
};

namespace {

using State = FaultyVfs::State;

// Our file object; the real VFS's file object follows it in the same allocation (SQLite
// allocates szOsFile bytes, which covers both).
struct FaultyFile {
  sqlite3_file base;  // first, so sqlite3_file* and FaultyFile* convert
  State* state;
  bool wal;
  bool database;  // a main database file

  sqlite3_file* real();
};
constexpr size_t kRealFileOffset = (sizeof(FaultyFile) + 15) / 16 * 16;

sqlite3_file* FaultyFile::real() {
  return reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(this) + kRealFileOffset);
}

FaultyFile* faulty(sqlite3_file* file) { return reinterpret_cast<FaultyFile*>(file); }
sqlite3_file* real(sqlite3_file* file) { return faulty(file)->real(); }
const sqlite3_io_methods* real_methods(sqlite3_file* file) { return real(file)->pMethods; }
sqlite3_vfs* real_vfs(sqlite3_vfs* vfs) { return static_cast<State*>(vfs->pAppData)->real; }

// --- sqlite3_io_methods: faults on write/sync/truncate, everything else forwarded ---

int file_close(sqlite3_file* file) { return real_methods(file)->xClose(real(file)); }
int file_read(sqlite3_file* file, void* buffer, int amount, sqlite3_int64 offset) {
  return real_methods(file)->xRead(real(file), buffer, amount, offset);
}
int file_write(sqlite3_file* file, const void* buffer, int amount, sqlite3_int64 offset) {
  const FaultyFile* f = faulty(file);
  if (const int rc = f->state->before_write(amount, f->database); rc != SQLITE_OK) return rc;
  return real_methods(file)->xWrite(real(file), buffer, amount, offset);
}
int file_truncate(sqlite3_file* file, sqlite3_int64 size) {
  if (const int rc = faulty(file)->state->before_truncate(); rc != SQLITE_OK) return rc;
  return real_methods(file)->xTruncate(real(file), size);
}
int file_sync(sqlite3_file* file, int flags) {
  if (const int rc = faulty(file)->state->before_sync(faulty(file)->wal); rc != SQLITE_OK) {
    return rc;
  }
  return real_methods(file)->xSync(real(file), flags);
}
int file_size(sqlite3_file* file, sqlite3_int64* size) {
  return real_methods(file)->xFileSize(real(file), size);
}
int file_lock(sqlite3_file* file, int level) {
  return real_methods(file)->xLock(real(file), level);
}
int file_unlock(sqlite3_file* file, int level) {
  return real_methods(file)->xUnlock(real(file), level);
}
int file_check_reserved_lock(sqlite3_file* file, int* out) {
  return real_methods(file)->xCheckReservedLock(real(file), out);
}
int file_control(sqlite3_file* file, int op, void* arg) {
  return real_methods(file)->xFileControl(real(file), op, arg);
}
int file_sector_size(sqlite3_file* file) { return real_methods(file)->xSectorSize(real(file)); }
int file_device_characteristics(sqlite3_file* file) {
  return real_methods(file)->xDeviceCharacteristics(real(file));
}
int file_shm_map(sqlite3_file* file, int page, int page_size, int extend, void volatile** out) {
  if (real_methods(file)->iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return real_methods(file)->xShmMap(real(file), page, page_size, extend, out);
}
int file_shm_lock(sqlite3_file* file, int offset, int n, int flags) {
  if (real_methods(file)->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return real_methods(file)->xShmLock(real(file), offset, n, flags);
}
void file_shm_barrier(sqlite3_file* file) {
  if (real_methods(file)->iVersion >= 2) real_methods(file)->xShmBarrier(real(file));
}
int file_shm_unmap(sqlite3_file* file, int delete_flag) {
  if (real_methods(file)->iVersion < 2) return SQLITE_OK;
  return real_methods(file)->xShmUnmap(real(file), delete_flag);
}
int file_fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
  *out = nullptr;  // "no mapping": SQLite falls back to xRead
  if (real_methods(file)->iVersion < 3) return SQLITE_OK;
  return real_methods(file)->xFetch(real(file), offset, amount, out);
}
int file_unfetch(sqlite3_file* file, sqlite3_int64 offset, void* p) {
  if (real_methods(file)->iVersion < 3) return SQLITE_OK;
  return real_methods(file)->xUnfetch(real(file), offset, p);
}

const sqlite3_io_methods kFileMethods = {
    3,
    file_close,
    file_read,
    file_write,
    file_truncate,
    file_sync,
    file_size,
    file_lock,
    file_unlock,
    file_check_reserved_lock,
    file_control,
    file_sector_size,
    file_device_characteristics,
    file_shm_map,
    file_shm_lock,
    file_shm_barrier,
    file_shm_unmap,
    file_fetch,
    file_unfetch,
};

// --- sqlite3_vfs: xOpen wraps the real file; the rest is forwarded to the real VFS ---

int vfs_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags,
             int* out_flags) {
  FaultyFile* f = faulty(file);
  f->state = static_cast<State*>(vfs->pAppData);
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  f->database = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  f->real()->pMethods = nullptr;
  const int rc = f->state->real->xOpen(f->state->real, name, f->real(), flags, out_flags);
  // SQLite calls xClose whenever pMethods is set, even after a failed open: mirror the real one.
  f->base.pMethods = f->real()->pMethods ? &kFileMethods : nullptr;
  return rc;
}
int vfs_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return real_vfs(vfs)->xDelete(real_vfs(vfs), name, sync_dir);
}
int vfs_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return real_vfs(vfs)->xAccess(real_vfs(vfs), name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  return real_vfs(vfs)->xFullPathname(real_vfs(vfs), name, n, out);
}
void* vfs_dl_open(sqlite3_vfs* vfs, const char* name) {
  return real_vfs(vfs)->xDlOpen(real_vfs(vfs), name);
}
void vfs_dl_error(sqlite3_vfs* vfs, int n, char* out) {
  real_vfs(vfs)->xDlError(real_vfs(vfs), n, out);
}
void (*vfs_dl_sym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return real_vfs(vfs)->xDlSym(real_vfs(vfs), handle, symbol);
}
void vfs_dl_close(sqlite3_vfs* vfs, void* handle) {
  real_vfs(vfs)->xDlClose(real_vfs(vfs), handle);
}
int vfs_randomness(sqlite3_vfs* vfs, int n, char* out) {
  return real_vfs(vfs)->xRandomness(real_vfs(vfs), n, out);
}
int vfs_sleep(sqlite3_vfs* vfs, int microseconds) {
  return real_vfs(vfs)->xSleep(real_vfs(vfs), microseconds);
}
int vfs_current_time(sqlite3_vfs* vfs, double* out) {
  return real_vfs(vfs)->xCurrentTime(real_vfs(vfs), out);
}
int vfs_get_last_error(sqlite3_vfs* vfs, int n, char* out) {
  State* state = static_cast<State*>(vfs->pAppData);
  {
    std::lock_guard lock(state->mutex);
    if (state->os_error) return *state->os_error;
  }
  return real_vfs(vfs)->xGetLastError(real_vfs(vfs), n, out);
}
int vfs_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return real_vfs(vfs)->xCurrentTimeInt64(real_vfs(vfs), out);
}
int vfs_set_system_call(sqlite3_vfs* vfs, const char* name, sqlite3_syscall_ptr call) {
  return real_vfs(vfs)->xSetSystemCall(real_vfs(vfs), name, call);
}
sqlite3_syscall_ptr vfs_get_system_call(sqlite3_vfs* vfs, const char* name) {
  return real_vfs(vfs)->xGetSystemCall(real_vfs(vfs), name);
}
const char* vfs_next_system_call(sqlite3_vfs* vfs, const char* name) {
  return real_vfs(vfs)->xNextSystemCall(real_vfs(vfs), name);
}

}  // namespace

FaultyVfs::FaultyVfs(std::string name) : state_(std::make_unique<State>()) {
  state_->name = std::move(name);
  state_->real = sqlite3_vfs_find(nullptr);
  if (!state_->real) throw std::runtime_error("FaultyVfs: SQLite has no default VFS");
  if (state_->real->iVersion < 3) throw std::runtime_error("FaultyVfs: default VFS too old");

  sqlite3_vfs& v = state_->vfs;
  v.iVersion = 3;
  v.szOsFile = static_cast<int>(kRealFileOffset) + state_->real->szOsFile;
  v.mxPathname = state_->real->mxPathname;
  v.zName = state_->name.c_str();
  v.pAppData = state_.get();
  v.xOpen = vfs_open;
  v.xDelete = vfs_delete;
  v.xAccess = vfs_access;
  v.xFullPathname = vfs_full_pathname;
  v.xDlOpen = vfs_dl_open;
  v.xDlError = vfs_dl_error;
  v.xDlSym = vfs_dl_sym;
  v.xDlClose = vfs_dl_close;
  v.xRandomness = vfs_randomness;
  v.xSleep = vfs_sleep;
  v.xCurrentTime = vfs_current_time;
  v.xGetLastError = vfs_get_last_error;
  v.xCurrentTimeInt64 = vfs_current_time_int64;
  v.xSetSystemCall = vfs_set_system_call;
  v.xGetSystemCall = vfs_get_system_call;
  v.xNextSystemCall = vfs_next_system_call;
  if (sqlite3_vfs_register(&v, 0) != SQLITE_OK) {
    throw std::runtime_error("FaultyVfs: cannot register " + state_->name);
  }
}

FaultyVfs::~FaultyVfs() { sqlite3_vfs_unregister(&state_->vfs); }

const std::string& FaultyVfs::name() const { return state_->name; }

void FaultyVfs::fail_writes_after(uint64_t bytes, int code, Files files) {
  std::lock_guard lock(state_->mutex);
  state_->write_code = code;
  state_->write_budget = bytes;
  state_->databases_only = files == Files::databases;
}

void FaultyVfs::report_os_error(int error) {
  std::lock_guard lock(state_->mutex);
  state_->os_error = error;
}

void FaultyVfs::fail_syncs(int code) {
  std::lock_guard lock(state_->mutex);
  state_->sync_code = code;
}

void FaultyVfs::fail_truncates(int code) {
  std::lock_guard lock(state_->mutex);
  state_->truncate_code = code;
}

void FaultyVfs::clear() {
  std::lock_guard lock(state_->mutex);
  state_->write_code.reset();
  state_->sync_code.reset();
  state_->truncate_code.reset();
  state_->os_error.reset();
}

uint64_t FaultyVfs::failures() const {
  std::lock_guard lock(state_->mutex);
  return state_->failures;
}

uint64_t FaultyVfs::syncs() const {
  std::lock_guard lock(state_->mutex);
  return state_->syncs;
}

uint64_t FaultyVfs::wal_syncs() const {
  std::lock_guard lock(state_->mutex);
  return state_->wal_syncs;
}

}  // namespace parley::test

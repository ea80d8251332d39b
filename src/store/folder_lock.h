// An advisory lock (flock) on the folder that holds a store file. Opening a store holds it
// shared; a recovery holds it exclusively while it moves the damaged file and its -wal and -shm
// aside and renames the new file into place, so that no process opens the store in between
// (it would pair the new file with SQLite companions of the old one, or make new ones that
// the new file would then inherit). Best effort: where the file system has no flock, there is
// no lock. The store's own file is never opened for this: closing any descriptor of a file
// drops every POSIX lock the process holds on it, SQLite's included.
#pragma once

#include <string>

namespace parley::store {

class FolderLock {
 public:
  enum Mode { shared, exclusive };
  // Waits for the lock on the folder of `store_path`.
  FolderLock(const std::string& store_path, Mode mode);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace parley::store

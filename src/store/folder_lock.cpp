#include "store/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace parley::store {

FolderLock::FolderLock(const std::string& store_path, Mode mode) {
  const std::filesystem::path folder = std::filesystem::path(store_path).parent_path();
  const std::string dir = folder.empty() ? "." : folder.string();
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return;
  int rc = 0;
  do {
    rc = ::flock(fd_, mode == exclusive ? LOCK_EX : LOCK_SH);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {  // no flock here (some network file systems): go on without
    ::close(fd_);
    fd_ = -1;
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace parley::store

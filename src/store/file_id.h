// Which file a path names now (device and inode): a file renamed, replaced or deleted under
// an open connection shows as another id, or none.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

namespace parley::store {

struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileId&) const = default;
};

inline std::optional<FileId> file_id_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

}  // namespace parley::store

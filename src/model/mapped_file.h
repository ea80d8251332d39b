// A read-only memory mapping of a whole file.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace parley::model {

class MappedFile {
 public:
  // Throws Error(not_found) when the file does not exist, Error(io) when it is not a regular
  // file (a FIFO, a device: refused at once, never read) or cannot be mapped, and
  // Error(bad_model) when it is empty or a Git LFS pointer: every file mapped is a model file.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace parley::model

// Finds the read-only reference folder (../shared beside the source tree, fixed at configure
// time). Tests that need it skip with a visible message when it is absent, except under
// CI=true, where its absence fails the test.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace parley::test {

// The shared folder, or nullopt (after a visible skip message or a CI failure).
std::optional<std::filesystem::path> shared_dir(const char* what_needs_it);

// A file under the shared folder, with the same skip rule.
std::optional<std::filesystem::path> shared_file(const std::string& relative);

std::string read_file(const std::filesystem::path& path);
// What a pipe or file descriptor gives until its end (or a read error).
std::string read_to_end(int fd);

// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace parley::test

// Usage: PARLEY_SHARED_OR_SKIP(path, "models/stories260k/hf"); then use `path`.
#define PARLEY_SHARED_OR_SKIP(var, relative)                              \
  auto var##_opt = ::parley::test::shared_file(relative);                 \
  if (!var##_opt) return;                                                 \
  const std::filesystem::path var = *var##_opt

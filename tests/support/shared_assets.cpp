#include "support/shared_assets.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace parley::test {
namespace {

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

}  // namespace

std::optional<std::filesystem::path> shared_dir(const char* what_needs_it) {
  // PARLEY_SHARED_DIR in the environment wins: test binaries run on another machine
  // (scripts/gpu-check.sh) find their copy of the folder there.
  const char* env = std::getenv("PARLEY_SHARED_DIR");
  const std::filesystem::path dir = env && *env ? env : PARLEY_SHARED_DIR;
  if (std::filesystem::is_directory(dir / "models")) return dir;
  const std::string msg = std::string("reference folder ") + dir.string() +
                          " is absent; skipping: " + what_needs_it;
  if (running_in_ci()) {
    FAIL(msg);
  } else {
    MESSAGE("SKIPPED: " << msg);
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> shared_file(const std::string& relative) {
  auto dir = shared_dir(relative.c_str());
  if (!dir) return std::nullopt;
  const auto path = *dir / relative;
  if (!std::filesystem::exists(path)) {
    FAIL("reference file missing: " << path.string());
    return std::nullopt;
  }
  return path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_to_end(int fd) {
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  return text;
}

TempDir::TempDir() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  const auto base = std::filesystem::temp_directory_path();
  for (;;) {
    path_ = base / ("parley-test-" + std::to_string(rd()) + "-" + std::to_string(counter++));
    if (std::filesystem::create_directory(path_)) break;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace parley::test

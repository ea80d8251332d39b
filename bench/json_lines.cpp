#include "json_lines.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace parley::bench {
namespace {

// Writes the line and flushes it, so that lines appear as each measurement ends, even when
// piped. Returns 0, or the errno of the write that failed.
int write_line(std::FILE* f, const std::string& text) {
  errno = 0;
  if (std::fputs(text.c_str(), f) >= 0 && std::fputc('\n', f) != EOF && std::fflush(f) == 0) {
    return 0;
  }
  return errno != 0 ? errno : EIO;
}

}  // namespace

JsonLines::JsonLines(const std::string& out_path) : out_path_(out_path) {
  if (out_path.empty()) return;
  file_.reset(std::fopen(out_path.c_str(), "a"));
  if (!file_) {
    throw std::runtime_error("cannot open --out file '" + out_path + "': " + std::strerror(errno));
  }
}

void JsonLines::write(const nlohmann::ordered_json& line) {
  const std::string text = line.dump();
  // Both are tried before either failure is reported, so that one still gets the line.
  const int stdout_error = write_line(stdout, text);
  const int file_error = file_ ? write_line(file_.get(), text) : 0;
  if (stdout_error) {
    throw std::runtime_error("cannot write the results to stdout: " +
                             std::string(std::strerror(stdout_error)));
  }
  if (file_error) {
    throw std::runtime_error("cannot write the results to --out file '" + out_path_ +
                             "': " + std::strerror(file_error));
  }
}

}  // namespace parley::bench

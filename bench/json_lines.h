// Where the measurements go: one JSON object per line on stdout, and appended to --out.
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace parley::bench {

class JsonLines {
 public:
  // Throws std::runtime_error when `out_path` (if not empty) cannot be opened.
  explicit JsonLines(const std::string& out_path);
  // Throws std::runtime_error naming stdout or the --out file, and the OS error, when the line
  // cannot be written there: measurements that were lost must not pass for a good run.
  void write(const nlohmann::ordered_json& line);

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string out_path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
};

}  // namespace parley::bench

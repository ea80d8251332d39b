// Where the measurements go: one JSON object per line on stdout, and appended to --out.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace parley::bench {

class JsonLines {
 public:
  // Throws std::runtime_error when `out_path` (if not empty) cannot be opened.
  explicit JsonLines(const std::string& out_path);
  void write(const nlohmann::ordered_json& line);

 private:
  std::ofstream file_;
};

}  // namespace parley::bench

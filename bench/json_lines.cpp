#include "json_lines.h"

#include <cstdio>
#include <stdexcept>

namespace parley::bench {

JsonLines::JsonLines(const std::string& out_path) {
  if (out_path.empty()) return;
  file_.open(out_path, std::ios::app);
  if (!file_) throw std::runtime_error("cannot open --out file '" + out_path + "'");
}

void JsonLines::write(const nlohmann::ordered_json& line) {
  const std::string text = line.dump();
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);  // lines appear as each measurement ends, even when piped
  if (file_.is_open()) {
    file_ << text << '\n';
    file_.flush();
  }
}

}  // namespace parley::bench

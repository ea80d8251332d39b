#include "available_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace parley::bench {

std::optional<uint64_t> mem_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(line.find(':') + 1));
    uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;  // the kernel writes "kB" and means KiB
  }
  return std::nullopt;
}

}  // namespace parley::bench

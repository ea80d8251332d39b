#include "support/process_memory.h"

#include <malloc.h>

#include <fstream>
#include <string>

namespace parley::test {
namespace {

uint64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  return 0;
}

}  // namespace

uint64_t resident_bytes() { return status_kib("VmRSS"); }
uint64_t resident_file_bytes() { return status_kib("RssFile"); }
uint64_t peak_resident_bytes() { return status_kib("VmHWM"); }

bool reset_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

void release_free_heap() { malloc_trim(0); }

}  // namespace parley::test

#include "peak_rss.h"

#include <sys/resource.h>

namespace parley::bench {

uint64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return uint64_t(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace parley::bench

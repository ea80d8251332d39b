#include "peak_rss.h"

#include <sys/resource.h>

namespace parley::bench {

double peak_rss_mb() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return double(usage.ru_maxrss) * 1024.0 / 1e6;  // Linux reports kilobytes
}

}  // namespace parley::bench

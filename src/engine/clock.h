// Milliseconds on a monotonic clock, for turn statistics.
#pragma once

#include <chrono>

namespace parley::engine {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace parley::engine

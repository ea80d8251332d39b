// Milliseconds on a monotonic clock, for turn statistics.
#pragma once

#include <chrono>
#include <cstdint>

namespace parley::engine {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace parley::engine

namespace parley::engine {

// Wall-clock milliseconds since the Unix epoch, for what is stored.
inline int64_t unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace parley::engine

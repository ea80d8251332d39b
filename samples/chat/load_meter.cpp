#include "load_meter.h"

#include <unistd.h>

#include <cstdio>

namespace chat {

int show_load_progress(float fraction, void* /*user*/) {
  static const bool terminal = ::isatty(STDERR_FILENO);
  static int shown = -1;  // the percentage on the line, -1 for none
  if (!terminal) return 0;
  if (fraction >= 1.0f) {
    if (shown >= 0) std::fprintf(stderr, "\r%30s\r", "");
    shown = -1;
    return 0;
  }
  const int percent = static_cast<int>(fraction * 100.0f);
  if (percent != shown) {
    std::fprintf(stderr, "\rloading the model: %3d %%", percent);
    std::fflush(stderr);
    shown = percent;
  }
  return 0;
}

}  // namespace chat

#include "load_meter.h"

#include <unistd.h>

#include <cstdio>

#include "parley.h"

namespace chat {
namespace {

int shown = -1;  // the percentage on the line, -1 for none

void draw() {
  std::fprintf(stderr, "\rloading the model: %3d %%", shown);
  std::fflush(stderr);
}

void clear_line() { std::fprintf(stderr, "\r%30s\r", ""); }

// As the library's own stderr lines, with the meter's line out of their way.
void log_around_meter(int level, const char* msg, void* /*user*/) {
  if (level > PARLEY_LOG_WARN) return;  // as the library's own lines
  if (shown >= 0) clear_line();
  std::fprintf(stderr, "parley: %s: %s\n", level == PARLEY_LOG_ERROR ? "error" : "warning", msg);
  if (shown >= 0) draw();
}

}  // namespace

int show_load_progress(float fraction, void* /*user*/) {
  static const bool terminal = ::isatty(STDERR_FILENO);
  if (!terminal) return 0;
  if (fraction >= 1.0f) {
    end_load_meter();
    return 0;
  }
  const int percent = static_cast<int>(fraction * 100.0f);
  if (shown < 0) parley_set_log_callback(log_around_meter, nullptr);
  if (percent != shown) {
    shown = percent;
    draw();
  }
  return 0;
}

void end_load_meter() {
  if (shown < 0) return;
  clear_line();
  shown = -1;
  parley_set_log_callback(nullptr, nullptr);
}

}  // namespace chat

// Log lines go to the callback installed through parley_set_log_callback, or to stderr.
#pragma once

#include <string>

namespace parley::log {

enum Level : int { error = 0, warn = 1, info = 2, debug = 3 };

using Sink = void (*)(int level, const char* msg, void* user);

void set_sink(Sink sink, void* user);
void write(Level level, const std::string& msg);

inline void warn_line(const std::string& msg) { write(warn, msg); }
inline void info_line(const std::string& msg) { write(info, msg); }
inline void debug_line(const std::string& msg) { write(debug, msg); }

}  // namespace parley::log

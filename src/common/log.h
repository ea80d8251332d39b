// Log lines go to the callback installed through parley_set_log_callback, or to stderr.
#pragma once

#include <string>

namespace parley::log {

enum Level : int { error = 0, warn = 1, info = 2, debug = 3 };

using Sink = void (*)(int level, const char* msg, void* user);

void set_sink(Sink sink, void* user);
// Hands `msg` to the sink. On a thread marked with mark_library_thread, the sink runs on a
// short-lived thread made for the call (write waits for it): runtimes such as Mono adopt a
// foreign thread on its first call into managed code and wait for it to end before their
// process exits, which a thread the library keeps for an engine's life would never do.
void write(Level level, const std::string& msg);

// Marks the calling thread as one the library keeps alive on its own (the idle spiller).
void mark_library_thread();

inline void warn_line(const std::string& msg) { write(warn, msg); }
inline void info_line(const std::string& msg) { write(info, msg); }
inline void debug_line(const std::string& msg) { write(debug, msg); }

}  // namespace parley::log

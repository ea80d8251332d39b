// What parley-chat writes: reply text as it streams (stoppable with Ctrl-C, SIGTERM and SIGHUP),
// id lines, errors.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "parley.h"

namespace chat {

// From now on Ctrl-C stops the reply being written instead of killing the program. SIGTERM and
// SIGHUP (unless ignored, as nohup does) stop it too, and ask the run to end: stdin then reads
// as at its end, and terminating_signal() names the signal.
void stop_replies_on_signals();

// Forgets a Ctrl-C pressed before this reply started (a SIGTERM or SIGHUP stays).
void clear_stop_request();

// Whether Ctrl-C was pressed since the last clear_stop_request(), or the run is to end.
bool stop_requested();

// The SIGTERM or SIGHUP that asked the run to end; 0 while none came.
int terminating_signal();

// true: from now on a Ctrl-C also ends a blocking read (it fails with EINTR) instead of being
// swallowed by it; false: reads go on after one again (the default).
void ctrl_c_ends_reads(bool ends);

// While one lives, a Ctrl-C interrupts the session's send also before any reply text comes
// (while a long message is still being read), from a thread of its own.
class InterruptOnCtrlC {
 public:
  explicit InterruptOnCtrlC(parley_session* session);
  ~InterruptOnCtrlC();
  InterruptOnCtrlC(const InterruptOnCtrlC&) = delete;
  InterruptOnCtrlC& operator=(const InterruptOnCtrlC&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

// A parley_text_fn: writes the text to stdout at once; returns non-zero after Ctrl-C, and
// when stdout cannot be written (no one would see the rest).
int stream_to_stdout(const char* utf8, size_t len, void* user);

// stream_to_stdout that also notes, in *user (a bool), that some text came: the reply's line
// is to be ended then, also when the call fails after it.
int stream_and_note(const char* utf8, size_t len, void* user);

// Flushes stdout; false when it, or an earlier write, failed (the reason is kept).
bool flush_stdout();

// flush_stdout(), saying on stderr when it fails: "parley-chat: error: cannot write <what> to
// standard output: <reason>". A run whose output was lost must not end in success.
bool finish_stdout(const char* what = "the reply");

// The conversation's last message; nullopt when there is none (or it cannot be read).
std::optional<parley_turn> last_turn(parley_session* s);

// The ids of the last reply as the conversation keeps them.
std::vector<int32_t> last_reply_ids(parley_session* s);

// Prints "ids: 1 2 3".
void print_ids(const std::vector<int32_t>& ids);

// Prints "parley-chat: error: <what>: <parley_last_error()> (<status name>)" to stderr.
void print_error(const char* what, parley_status status);

}  // namespace chat

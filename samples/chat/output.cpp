#include "output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "sessions.h"

namespace chat {
namespace {

// A signal handler may only touch lock-free flags; the text callback and InterruptOnCtrlC's
// thread see them and ask the engine to stop.
std::atomic<bool> g_stop_requested{false};

void on_sigint(int) { g_stop_requested.store(true); }

// SIGTERM or SIGHUP, once one came: it stops the reply and ends the run.
std::atomic<int> g_terminating_signal{0};

// The next read of stdin finds its end, also one that blocks now (it is restarted on the new
// file): a console waiting for a line ends as at the end of its input. open, dup2 and close
// are async-signal-safe.
void end_stdin() {
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0) {
    ::close(STDIN_FILENO);
    return;
  }
  if (null_fd == STDIN_FILENO) return;
  ::dup2(null_fd, STDIN_FILENO);
  ::close(null_fd);
}

void on_terminating_signal(int signal_number) {
  const int saved_errno = errno;  // the interrupted code may be about to read it
  g_terminating_signal.store(signal_number);
  end_stdin();
  errno = saved_errno;
}

void install_handler(int signal_number, void (*handler)(int), bool restart_calls) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart_calls ? SA_RESTART : 0;
  sigaction(signal_number, &sa, nullptr);
}

// Restarting interrupted calls keeps the library's file and store work going; the read of
// stdin ends all the same (end_stdin). A signal ignored at start (nohup) stays ignored.
void install_terminating_handler(int signal_number) {
  struct sigaction old {};
  if (sigaction(signal_number, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) return;
  install_handler(signal_number, on_terminating_signal, true);
}

// Why stdout could not be written (an errno value); 0 while it could.
int g_stdout_error = 0;

// Right after a write to stdout failed; the first reason is the one told.
void note_stdout_error() {
  if (g_stdout_error == 0) g_stdout_error = errno != 0 ? errno : EIO;
}

void install_sigint_handler(bool restart_reads) { install_handler(SIGINT, on_sigint, restart_reads); }

}  // namespace

void stop_replies_on_signals() {
  install_sigint_handler(true);
  install_terminating_handler(SIGTERM);
  install_terminating_handler(SIGHUP);
}

void clear_stop_request() { g_stop_requested.store(false); }

bool stop_requested() { return g_stop_requested.load() || g_terminating_signal.load() != 0; }

int terminating_signal() { return g_terminating_signal.load(); }

void ctrl_c_ends_reads(bool ends) { install_sigint_handler(!ends); }

InterruptOnCtrlC::InterruptOnCtrlC(parley_session* session)
    : watcher_([this, session] {
        // A signal handler cannot wake a thread portably: a short poll is enough for a key.
        // The request is repeated until the call ends: one that came before the call started
        // is forgotten by it.
        while (!done_.load()) {
          if (stop_requested()) parley_session_interrupt(session);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }) {}

InterruptOnCtrlC::~InterruptOnCtrlC() {
  done_.store(true);
  watcher_.join();
}

int stream_to_stdout(const char* utf8, size_t len, void*) {
  if (std::fwrite(utf8, 1, len, stdout) != len) note_stdout_error();
  if (!flush_stdout()) return 1;
  return stop_requested() ? 1 : 0;
}

int stream_and_note(const char* utf8, size_t len, void* user) {
  *static_cast<bool*>(user) = true;
  return stream_to_stdout(utf8, len, nullptr);
}

bool flush_stdout() {
  if (std::fflush(stdout) != 0) note_stdout_error();
  // A failed write whose errno is gone (a printf that flushed a full buffer) still counts.
  if (std::ferror(stdout) && g_stdout_error == 0) g_stdout_error = EIO;
  return g_stdout_error == 0;
}

bool finish_stdout(const char* what) {
  if (flush_stdout()) return true;
  std::fprintf(stderr, "parley-chat: error: cannot write %s to standard output: %s\n", what,
               std::strerror(g_stdout_error));
  return false;
}

std::optional<parley_turn> last_turn(parley_session* s) {
  const auto info = info_of(s);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  if (!info || info->n_turns == 0 ||
      parley_session_get_turn(s, info->n_turns - 1, &turn) != PARLEY_OK) {
    return std::nullopt;
  }
  return turn;
}

std::vector<int32_t> last_reply_ids(parley_session* s) {
  const std::optional<parley_turn> reply = last_turn(s);
  if (!reply) return {};
  size_t n = 0;
  if (parley_session_get_tokens(s, nullptr, 0, &n) != PARLEY_OK) return {};
  std::vector<int32_t> ids(n);
  if (parley_session_get_tokens(s, ids.data(), ids.size(), &n) != PARLEY_OK) return {};
  return std::vector<int32_t>(ids.end() - std::min<size_t>(reply->n_tokens, ids.size()), ids.end());
}

void print_ids(const std::vector<int32_t>& ids) {
  std::string line = "ids:";
  for (int32_t id : ids) line += " " + std::to_string(id);
  std::printf("%s\n", line.c_str());
}

void print_error(const char* what, parley_status status) {
  // stdout may be a buffered pipe: flush it so the error lands after what preceded it.
  std::fflush(stdout);
  std::fprintf(stderr, "parley-chat: error: %s: %s (%s)\n", what, parley_last_error(),
               parley_status_name(status));
}

}  // namespace chat

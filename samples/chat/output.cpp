#include "output.h"

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

// A signal handler may only touch a lock-free flag; the text callback and InterruptOnCtrlC's
// thread see it and ask the engine to stop.
std::atomic<bool> g_stop_requested{false};

void on_sigint(int) { g_stop_requested.store(true); }

// Why stdout could not be written (an errno value); 0 while it could.
int g_stdout_error = 0;

// Right after a write to stdout failed; the first reason is the one told.
void note_stdout_error() {
  if (g_stdout_error == 0) g_stdout_error = errno != 0 ? errno : EIO;
}

void install_sigint_handler(bool restart_reads) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart_reads ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void stop_replies_on_ctrl_c() { install_sigint_handler(true); }

void clear_stop_request() { g_stop_requested.store(false); }

bool stop_requested() { return g_stop_requested.load(); }

void ctrl_c_ends_reads(bool ends) { install_sigint_handler(!ends); }

InterruptOnCtrlC::InterruptOnCtrlC(parley_session* session)
    : watcher_([this, session] {
        // A signal handler cannot wake a thread portably: a short poll is enough for a key.
        // The request is repeated until the call ends: one that came before the call started
        // is forgotten by it.
        while (!done_.load()) {
          if (g_stop_requested.load()) parley_session_interrupt(session);
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
  return g_stop_requested.load() ? 1 : 0;
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

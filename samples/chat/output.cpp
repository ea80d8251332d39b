#include "output.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>

namespace chat {
namespace {

// A signal handler may only touch a lock-free flag; the text callback and InterruptOnCtrlC's
// thread see it and ask the engine to stop.
std::atomic<bool> g_stop_requested{false};

void on_sigint(int) { g_stop_requested.store(true); }

}  // namespace

void stop_replies_on_ctrl_c() { std::signal(SIGINT, on_sigint); }

void clear_stop_request() { g_stop_requested.store(false); }

InterruptOnCtrlC::InterruptOnCtrlC(parley_session* session)
    : watcher_([this, session] {
        // A signal handler cannot wake a thread portably: a short poll is enough for a key.
        while (!done_.load()) {
          if (g_stop_requested.load()) {
            parley_session_interrupt(session);
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }) {}

InterruptOnCtrlC::~InterruptOnCtrlC() {
  done_.store(true);
  watcher_.join();
}

int stream_to_stdout(const char* utf8, size_t len, void*) {
  std::fwrite(utf8, 1, len, stdout);
  std::fflush(stdout);
  return g_stop_requested.load() ? 1 : 0;
}

std::optional<parley_turn> last_turn(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  parley_turn turn;
  turn.struct_size = sizeof turn;
  if (parley_session_get_info(s, &info) != PARLEY_OK || info.n_turns == 0 ||
      parley_session_get_turn(s, info.n_turns - 1, &turn) != PARLEY_OK) {
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

// parley-store-writer MODEL DB PREFIX SESSIONS TURNS: one of the processes of the two-process
// store test. Creates sessions PREFIX-0 .. PREFIX-(SESSIONS-1) in the store DB and sends TURNS
// turns to each, round robin, suspending every other turn so that KV is written too. After
// each acknowledged turn it prints "ack ID N" (N messages stored). Any failure is printed and
// ends the process with status 1: a caller must never see the other process's lock.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api_helpers.h"
#include "parley.h"
#include "two_process_turns.h"

using namespace parley::test;

namespace {

[[noreturn]] void die(const char* what, parley_status st) {
  std::fprintf(stderr, "store writer: %s: %s: %s\n", what, parley_status_name(st), parley_last_error());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL DB PREFIX SESSIONS TURNS\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1], db = argv[2], prefix = argv[3];
  const int n_sessions = std::atoi(argv[4]), n_turns = std::atoi(argv[5]);
  const auto eo = engine_options(model, db);
  parley_engine* e = nullptr;
  if (const parley_status st = parley_engine_open(&eo, &e)) die("engine_open", st);
  std::vector<parley_session*> sessions(size_t(n_sessions), nullptr);
  for (int i = 0; i < n_sessions; ++i) {
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = "raw";
    const std::string id = session_id(prefix, i);
    so.id = id.c_str();
    if (const parley_status st = parley_session_create(e, &so, &sessions[size_t(i)])) die("session_create", st);
  }
  const auto g = greedy_options(kWriterReplyTokens);
  for (int turn = 0; turn < n_turns; ++turn) {
    for (int i = 0; i < n_sessions; ++i) {
      parley_session* s = sessions[size_t(i)];
      const std::string text = writer_turn_text(prefix, i, turn);
      if (const parley_status st = parley_session_send(s, text.c_str(), &g, nullptr, nullptr, nullptr)) die("send", st);
      std::printf("ack %s %d\n", session_id(prefix, i).c_str(), 2 * (turn + 1));
      std::fflush(stdout);
      if ((turn + i) % 2 == 1) {
        if (const parley_status st = parley_session_suspend(s)) die("suspend", st);
      }
    }
  }
  for (parley_session* s : sessions) parley_session_close(s);
  parley_engine_close(e);
  return 0;
}

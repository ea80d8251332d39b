// Two processes commit turns and spill KV into one store file at the same time, each on its
// own sessions. Neither may see the other's write lock (SQLITE_BUSY would surface as STORAGE);
// afterwards every acknowledged turn is stored and each conversation equals its turns
// replayed alone.
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hardening_model.h"
#include "parley.h"
#include "replay.h"
#include "support/shared_assets.h"
#include "two_process_turns.h"

extern char** environ;

using namespace parley::test;

namespace {

constexpr int kSessions = 3;
constexpr int kTurns = 12;

pid_t spawn_writer(const std::string& db, const std::string& prefix, const std::string& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string sessions = std::to_string(kSessions), turns = std::to_string(kTurns);
  std::vector<std::string> args = {PARLEY_STORE_WRITER_EXE, hardening_model(), db, prefix,
                                   sessions, turns};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

// The last "ack ID N" of every session in a writer's output.
std::map<std::string, int> acks(const std::string& out) {
  std::istringstream in(read_file(out));
  std::map<std::string, int> last;
  std::string word, id;
  int n = 0;
  while (in >> word >> id >> n) {
    if (word == "ack") last[id] = n;
  }
  return last;
}

}  // namespace

TEST_CASE("two processes commit to one store at once; nothing is lost, no caller sees a lock") {
  TempDir dir;
  const std::string db = (dir / "shared.db").string();
  const std::vector<std::string> prefixes = {"p", "q"};
  std::vector<pid_t> pids;
  for (const auto& prefix : prefixes) pids.push_back(spawn_writer(db, prefix, (dir / (prefix + ".out")).string()));
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    REQUIRE(waitpid(pids[i], &status, 0) == pids[i]);
    CAPTURE(prefixes[i]);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 1: a call failed (its message is on stderr)
  }

  const auto ro = engine_options(hardening_model(), "");
  parley_engine* reference = nullptr;
  REQUIRE(parley_engine_open(&ro, &reference) == PARLEY_OK);
  const auto so = engine_options(hardening_model(), db);
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&so, &e) == PARLEY_OK);
  for (const auto& prefix : prefixes) {
    const auto acked = acks((dir / (prefix + ".out")).string());
    for (int i = 0; i < kSessions; ++i) {
      const std::string id = session_id(prefix, i);
      CAPTURE(id);
      CHECK(acked.count(id) == 1);
      if (!acked.count(id)) continue;
      CHECK(acked.at(id) == 2 * kTurns);
      std::vector<TurnRecord> turns;
      for (int t = 0; t < kTurns; ++t) {
        turns.push_back({writer_turn_text(prefix, i, t), kWriterReplyTokens, kWriterReplyTokens, false});
      }
      parley_session* s = nullptr;
      REQUIRE(parley_session_open(e, id.c_str(), &s) == PARLEY_OK);
      Transcript stored;
      REQUIRE(read_transcript(s, stored) == PARLEY_OK);
      CHECK(stored.texts.size() >= size_t(acked.at(id)));
      CHECK(stored == replay(reference, turns));
      parley_session_close(s);
    }
  }
  parley_engine_close(e);
  parley_engine_close(reference);
}

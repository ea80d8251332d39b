// Crash consistency: a child process holding a conversation is killed with SIGKILL at random
// moments while it commits turns and spills KV, hundreds of times. After each kill the file
// passes SQLite's integrity_check, every turn the child had seen acknowledged is stored, and
// the session resumes.
#include <doctest/doctest.h>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "session_fixture.h"
#include "store/store.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;

namespace {

// Sanitized builds wait ten times longer per kill (below), so they kill fewer times: enough
// to land kills in every phase; the optimized build's 200 are the thorough run.
constexpr int kKills = kSanitizerBuild ? 64 : 200;
constexpr int kRoundsPerSession = 16;
constexpr int kTurnsPerChild = 8;  // 16 x 8 turns of <= 26 tokens fit the context of 4096

// A tiny random model with a long context, so many kills fit one conversation.
const std::string& crash_model() {
  SynthSpec spec;
  spec.context_length = 4096;
  spec.n_kv_heads = 1;
  return synthetic_gguf_once("crash", spec);
}

std::string session_of(int round) { return "crash-" + std::to_string(round / kRoundsPerSession); }

// The child: open or create the session, then send, acknowledge and spill until killed.
[[noreturn]] void child_main(const std::string& db, const std::string& id, int ack_fd) {
  try {
    auto engine = open_engine_with_store(crash_model(), kv::KvType::int8, {db});
    std::unique_ptr<engine::Session> s;
    if (engine->store()->load_session(id)) {
      s = engine::Session::open(engine, id);
    } else {
      auto o = session_options("sys", "llama2");
      o.id = id;
      s = std::make_unique<engine::Session>(engine, o);
    }
    for (int turn = 0; turn < kTurnsPerChild; ++turn) {
      greedy_turn(*s, "a b", 3);
      // Acknowledged: send() returned, so these messages must survive anything now.
      const std::string ack = std::to_string(s->messages().size()) + "\n";
      if (::write(ack_fd, ack.data(), ack.size()) < 0) ::_exit(3);
      if (turn % 2 == 1) s->spill();
    }
    for (;;) ::pause();  // wait for the kill
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash child: %s\n", e.what());
    ::_exit(2);
  } catch (...) {
    ::_exit(2);
  }
}

std::string integrity_check(const std::string& db) {
  sqlite3* conn = nullptr;
  if (sqlite3_open(db.c_str(), &conn) != SQLITE_OK) return "cannot open";
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(conn, "PRAGMA integrity_check", -1, &st, nullptr);
  std::string result = sqlite3_step(st) == SQLITE_ROW
                           ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                           : "no answer";
  sqlite3_finalize(st);
  sqlite3_close(conn);
  return result;
}

}  // namespace

TEST_CASE("SIGKILL during commits and spills never loses an acknowledged turn") {
  TempDir dir;
  const std::string db = (dir / "crash.db").string();
  crash_model();  // written before forking
  std::mt19937 rng(2026);
  std::map<std::string, size_t> acked;  // per session: messages the child saw committed
  int kills = 0;
  for (int round = 0; round < kKills; ++round) {
    CAPTURE(round);
    const std::string id = session_of(round);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_main(db, id, fds[1]);
    }
    ::close(fds[1]);
    // A random while: the kill lands in start-up, a turn, a commit or a spill. Sanitized
    // builds run about ten times slower, so their window is wider by as much.
    const useconds_t scale = kSanitizerBuild ? 10 : 1;
    ::usleep(std::uniform_int_distribution<useconds_t>(2000 * scale, 120000 * scale)(rng));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE_MESSAGE(WIFSIGNALED(status), "the child stopped on its own: " << status);
    ++kills;
    const std::string acks = read_to_end(fds[0]);
    ::close(fds[0]);
    for (size_t pos = 0; pos < acks.size();) {
      const size_t end = acks.find('\n', pos);
      if (end == std::string::npos) break;  // a line cut by the kill was never acknowledged
      acked[id] = std::max<size_t>(acked[id], std::stoul(acks.substr(pos, end - pos)));
      pos = end + 1;
    }

    REQUIRE(integrity_check(db) == "ok");
    if (acked[id] == 0) continue;
    store::Store store(db);
    CHECK(store.load_turns(id).size() >= acked[id]);
  }
  CHECK(kills == kKills);
  size_t total = 0;
  for (const auto& [id, n] : acked) total += n;
  MESSAGE(kills << " kills; " << total << " messages acknowledged in " << acked.size()
                << " conversations");
  CHECK(total > 0);
  // Every conversation resumes and goes on.
  auto engine = open_engine_with_store(crash_model(), kv::KvType::int8, {db});
  for (const auto& [id, n] : acked) {
    CAPTURE(id);
    if (n == 0) continue;
    auto s = engine::Session::open(engine, id);
    CHECK(s->messages().size() >= n);
    CHECK(greedy_turn(*s, "c", 3).generated_tokens == 3);
  }
}

// A turn that replace_turns_from reported done (appended, or rewritten in place) is in the
// file even if the process dies the next instant: a forked child writes turns and kills itself
// with SIGKILL right after the last call returns (no destructor, no close, no checkpoint), and
// the parent reads the file.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "append_turns.h"
#include "store/store.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::store;

namespace {

constexpr int kTurns = 5;

// Runs in the child only: no test macros, and it never returns.
[[noreturn]] void append_then_die(const std::string& path) {
  try {
    Store store(path);
    for (int i = 0; i < kTurns; ++i) {
      append_turns(store, "s", static_cast<uint32_t>(i),
                   std::vector{StoredTurn{1 + i % 2, "turn " + std::to_string(i), {i}, true}});
    }
    // The last reply went on: its turn is rewritten in place.
    store.replace_turns_from("s", kTurns - 1, kTurns,
                             std::vector{StoredTurn{1, "turn 4, longer", {4, 5}, false}});
    raise(SIGKILL);
  } catch (...) {
  }
  _exit(2);  // reached only if the store failed
}

}  // namespace

TEST_CASE("store: turns survive a SIGKILL right after replace_turns_from returns") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  {
    Store store(path);
    StoredSession s;
    s.id = "s";
    store.create_session(s);
  }  // no connection is open across the fork

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) append_then_die(path);

  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // The child never closed the store, so its commits are still only in the WAL.
  CHECK(std::filesystem::exists(path + "-wal"));

  Store store(path);
  CHECK_FALSE(store.recovery().has_value());
  const auto turns = store.load_turns("s");
  REQUIRE(turns.size() == kTurns);
  CHECK(turns.back().text == "turn 4, longer");
  CHECK(turns.back().token_ids == std::vector<int32_t>{4, 5});
}

// A conversation new to the store (created with a system prompt, imported, forked) is stored
// whole or not at all: whichever write the disk refuses, the call fails with STORAGE, the
// store holds nothing under the id, and the same call succeeds once the disk has room.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "session_fixture.h"
#include "support/faulty_vfs.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

constexpr uint64_t kBudgetStep = 512;  // bytes more room each try

// Runs `create` with the disk full after 0, 512, 1024, ... bytes until it succeeds; each
// failure must be STORAGE and leave no conversation `id`, and the same call must then work.
// Returns how many budgets failed (the turns' write must have been among them).
int fail_until_stored(FaultyVfs& vfs, engine::Engine& engine, const std::string& id,
                      const std::function<void()>& create) {
  for (uint64_t budget = 0;; budget += kBudgetStep) {
    vfs.fail_writes_after(budget, SQLITE_FULL);
    try {
      create();
      vfs.clear();
      return int(budget / kBudgetStep);
    } catch (const Error& e) {
      vfs.clear();
      INFO("budget " << budget << ": " << std::string(e.what()));
      REQUIRE(e.status() == Status::storage);
      REQUIRE_FALSE(engine.store()->load_session(id).has_value());
      create();  // the id is free again: the same call works with room
      engine.store()->delete_session(id);
    }
  }
}

struct FullDisk {
  FaultyVfs vfs{"parley-faulty-create"};
  TempDir dir;
  std::shared_ptr<engine::Engine> engine = open_engine_with_store(
      small_synthetic_model(), kv::KvType::int8, {(dir / "s.db").string(), 0, vfs.name()});
};

engine::SessionOptions options_named(const std::string& id) {
  engine::SessionOptions o = session_options("a b c d e f", "raw");
  o.id = id;
  return o;
}

}  // namespace

TEST_CASE("a session created with a system prompt on a full disk leaves nothing stored") {
  FullDisk disk;
  std::unique_ptr<engine::Session> s;
  const int failures = fail_until_stored(disk.vfs, *disk.engine, "npc", [&] {
    s = std::make_unique<engine::Session>(disk.engine, options_named("npc"));
    s.reset();  // closed: the next try uses the id again
  });
  CHECK(failures > 1);  // the header's write and the system turn's
  CHECK(disk.engine->store()->load_turns("npc").size() == 1);
}

TEST_CASE("an import on a full disk leaves nothing stored, from ids or from texts") {
  FullDisk disk;
  std::string json;
  {
    engine::Session source(disk.engine, options_named("source"));
    greedy_turn(source, "g h", 4);
    greedy_turn(source, "i j", 4);
    json = source.export_json();
  }
  // The texts alone: each exchange is added anew.
  const std::string texts =
      R"({"format":"parley-conversation","version":1,"chat_template":"raw",)"
      R"("system_prompt":"a b c d e f","messages":[{"role":"system","text":"a b c d e f"},)"
      R"({"role":"user","text":"g h"},{"role":"assistant","text":"k l"},)"
      R"({"role":"user","text":"i j"},{"role":"assistant","text":"m n"}]})";
  for (const std::string& file : {json, texts}) {
    CAPTURE(file);
    const int failures = fail_until_stored(disk.vfs, *disk.engine, "copy", [&] {
      engine::Session::import_json(disk.engine, file, "copy").reset();
    });
    CHECK(failures > 0);
    CHECK(disk.engine->store()->load_turns("copy").size() == 5);
    disk.engine->store()->delete_session("copy");
  }
}

TEST_CASE("a fork on a full disk leaves nothing stored") {
  FullDisk disk;
  engine::Session source(disk.engine, options_named("source"));
  greedy_turn(source, "g h", 4);
  const int failures =
      fail_until_stored(disk.vfs, *disk.engine, "branch", [&] { source.fork("branch").reset(); });
  CHECK(failures > 0);
  CHECK(disk.engine->store()->load_turns("branch").size() == 3);
}

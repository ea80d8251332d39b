// A failing disk under a live conversation: commits and spills report STORAGE, the session
// stays usable in memory, nothing committed before is lost, and once the disk works again the
// turns that could not be written are committed with the next one.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
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

Status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

// Two engines on one store file, and the options of a raw conversation "shared" for either.
struct TwoEngines {
  TempDir dir;
  StoreSetup store{(dir / "s.db").string()};
  std::shared_ptr<engine::Engine> first =
      open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  std::shared_ptr<engine::Engine> second =
      open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  engine::SessionOptions options = [] {
    engine::SessionOptions o = session_options("", "raw");
    o.id = "shared";
    return o;
  }();
};

}  // namespace

TEST_CASE("disk full during a turn's commit: STORAGE, the turn kept, committed later") {
  FaultyVfs vfs("parley-faulty-commit");
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto o = session_options("", "raw");
  o.id = "diskfull";
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db, 0, vfs.name()});
    engine::Session s(engine, o);
    greedy_turn(s, "a b", 5);  // committed
    vfs.fail_writes_after(0, SQLITE_FULL);
    try {
      greedy_turn(s, "c d", 5);
      FAIL("the commit must fail");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
      CHECK(std::string(e.what()).find("full") != std::string::npos);  // SQLite's own words
    }
    CHECK(s.messages().size() == 4);  // the turn lives on in memory
    vfs.clear();
    greedy_turn(s, "e", 5);  // commits both turns
    CHECK(engine->store()->load_turns("diskfull").size() == 6);
    vfs.fail_writes_after(0, SQLITE_FULL);
  }  // closing cannot spill (the disk is full): it logs and goes on
  vfs.clear();
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db, 0, vfs.name()});
  auto s = engine::Session::open(engine, "diskfull");
  CHECK(s->messages().size() == 6);
  CHECK(greedy_turn(*s, "f", 3).kv_source == engine::KvSource::rebuilt);  // no KV was stored
}

TEST_CASE("disk full during a spill: STORAGE, the KV stays resident and the session works") {
  FaultyVfs vfs("parley-faulty-spill");
  TempDir dir;
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string(), 0, vfs.name()});
  engine::Session s(engine, session_options());
  greedy_turn(s, "a b c", 40);
  const auto resident = s.kv_bytes_resident();
  vfs.fail_writes_after(0, SQLITE_FULL);
  CHECK(status_of([&] { s.spill(); }) == Status::storage);
  CHECK_FALSE(s.spilled());
  CHECK(s.kv_bytes_resident() == resident);
  vfs.fail_writes_after(4096, SQLITE_IOERR_WRITE);  // part of the spill gets written
  CHECK(status_of([&] { s.spill(); }) == Status::storage);
  CHECK_FALSE(s.spilled());
  CHECK(s.kv_bytes_resident() == resident);
  vfs.clear();
  CHECK(greedy_turn(s, "d", 5).kv_source == engine::KvSource::resident);
  CHECK(s.spill());
  CHECK(greedy_turn(s, "e", 5).kv_source == engine::KvSource::restored);
}

TEST_CASE("disk full while a new system prompt is stored: STORAGE, nothing changed") {
  FaultyVfs vfs("parley-faulty-system");
  TempDir dir;
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string(), 0, vfs.name()});
  auto o = session_options("a b", "raw");
  o.id = "prompted";
  engine::Session s(engine, o);
  greedy_turn(s, "c d", 5);
  const auto ids = s.tokens();
  const auto resident = s.kv_bytes_resident();
  vfs.fail_writes_after(0, SQLITE_FULL);
  CHECK(status_of([&] { s.set_system_prompt("e f g"); }) == Status::storage);
  vfs.clear();
  CHECK(s.messages().front().text == "a b");
  CHECK(s.tokens() == ids);
  CHECK(s.kv_bytes_resident() == resident);
  CHECK(engine->store()->load_turns("prompted").front().text == "a b");
  CHECK(greedy_turn(s, "h", 3).kv_source == engine::KvSource::resident);
  s.set_system_prompt("e f g");
  CHECK(engine->store()->load_turns("prompted").front().text == "e f g");
  CHECK(engine->store()->load_session("prompted")->system_prompt == "e f g");
}

// Two engines on one store file, each with the same stored conversation open: the first to
// commit wins; the other's turn is a store problem (STORAGE, saying why), kept in its memory.
TEST_CASE("a conversation changed in the store by another engine: STORAGE, not a bad argument") {
  TwoEngines both;
  auto& [dir, store, first, second, options] = both;
  {
    engine::Session s(first, options);
    greedy_turn(s, "a b", 3);
  }
  auto mine = engine::Session::open(first, "shared");
  auto theirs = engine::Session::open(second, "shared");
  greedy_turn(*theirs, "c", 3);
  std::string message;
  const Status status = status_of([&] {
    try {
      greedy_turn(*mine, "d", 3);
    } catch (const Error& e) {
      message = e.what();
      throw;
    }
  });
  CHECK(status == Status::storage);
  CHECK(message.find("another engine") != std::string::npos);
  CHECK(mine->messages().size() == 4);  // the turn stays in memory
  theirs.reset();
  const auto stored = engine::Session::open(second, "shared");
  CHECK(stored->messages().size() == 4);
  CHECK(stored->messages()[2].text == "c");
}

// The count of turns alone misses another engine's rewrite that leaves as many turns, and a
// conversation deleted and started again under the same id: the stale engine's next turn
// would be grafted onto another conversation. Both are refused as changed elsewhere.
TEST_CASE("another engine's rewrite with the same turn count, or a reused id: STORAGE") {
  TwoEngines both;
  auto& [dir, store, first, second, options] = both;
  auto mine = std::make_unique<engine::Session>(first, options);
  greedy_turn(*mine, "a b", 3);
  const auto expect_refused = [&] {
    std::string message;
    try {
      greedy_turn(*mine, "stale", 3);
      FAIL("the stale turn must be refused");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
      message = e.what();
    }
    CHECK(message.find("another engine") != std::string::npos);
  };
  SUBCASE("rewound and sent again") {
    auto theirs = engine::Session::open(second, "shared");
    theirs->rewind(2);
    greedy_turn(*theirs, "c", 3);
    REQUIRE(second->store()->load_turns("shared").size() == 2);
    expect_refused();
    const auto turns = second->store()->load_turns("shared");
    REQUIRE(turns.size() == 2);
    CHECK(turns[0].text == "c");
  }
  SUBCASE("deleted and created again") {
    second->delete_stored_session("shared");
    {
      engine::Session theirs(second, options);
      greedy_turn(theirs, "c", 3);
    }
    expect_refused();
    const auto turns = second->store()->load_turns("shared");
    REQUIRE(turns.size() == 2);
    CHECK(turns[0].text == "c");
    // Nor is this session's KV stored under their conversation, nor its policy.
    CHECK(status_of([&] { mine->spill(); }) == Status::storage);
    CHECK(status_of([&] { mine->set_overflow(engine::OverflowPolicy::drop_oldest); }) ==
          Status::storage);
    CHECK(second->store()->load_session("shared")->overflow == 0);
  }
  CHECK(mine->messages().size() == 4);  // both turns stay in memory here
}

// Another process's recovery renames the store aside and makes a new file at its path (or
// the file is deleted): commits into the old file would be lost, so each is refused.
TEST_CASE("the store file moved aside while open: STORAGE, the turn kept in memory") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "a b", 3);
  std::filesystem::rename(db, db + ".corrupt-1");
  std::string message;
  try {
    greedy_turn(s, "c", 3);
    FAIL("the commit must be refused");
  } catch (const Error& e) {
    CHECK(e.status() == Status::storage);
    message = e.what();
  }
  CHECK(message.find("moved, replaced or deleted") != std::string::npos);
  CHECK(s.messages().size() == 4);  // kept in memory, as with any STORAGE failure
  CHECK(status_of([&] { s.spill(); }) == Status::storage);
}

// A turn the store refused lives in memory until the next commit. Spilling the session's KV
// (suspend, the engine's spills of idle sessions, closing the engine) commits it first: once
// the KV is in the store, nothing resident holds that turn any more.
TEST_CASE("a turn the store refused is committed before the KV is spilled") {
  FaultyVfs vfs("parley-faulty-pending");
  for (const bool by_engine : {false, true}) {
    CAPTURE(by_engine);
    TempDir dir;
    const StoreSetup store{(dir / "s.db").string(), 0, vfs.name()};
    auto o = session_options("", "raw");
    o.id = "pending";
    {
      auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
      engine::Session s(engine, o);
      greedy_turn(s, "a b", 5);
      vfs.fail_writes_after(0, SQLITE_FULL);
      CHECK(status_of([&] { greedy_turn(s, "c d", 5); }) == Status::storage);
      // While the store still refuses, so does the spill: the KV stays with the turn.
      CHECK(status_of([&] { s.spill(); }) == Status::storage);
      CHECK_FALSE(s.spilled());
      vfs.clear();
      if (by_engine) {
        engine->spill_all();  // as for idle sessions, and when the engine closes
      } else {
        CHECK(s.spill());
      }
      CHECK(s.spilled());
      CHECK(engine->store()->load_turns("pending").size() == 4);
    }
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
    auto s = engine::Session::open(engine, "pending");
    REQUIRE(s->messages().size() == 4);
    CHECK(s->messages()[2].text == "c d");
    CHECK(greedy_turn(*s, "e", 3).kv_source == engine::KvSource::restored);
  }
}

// Rewinding, a new system prompt and a spill write the stored conversation as this session
// last left it: after another engine changed it, each is refused (STORAGE, saying why) and the
// other engine's turns (and KV) stay in the store.
TEST_CASE("rewind, system prompt and spill after another engine's turn: STORAGE") {
  TwoEngines both;
  auto& [dir, store, first, second, options] = both;
  auto mine = std::make_unique<engine::Session>(first, options);  // its KV resident
  greedy_turn(*mine, "a b", 3);
  greedy_turn(*mine, "c", 3);
  auto theirs = engine::Session::open(second, "shared");
  greedy_turn(*theirs, "d", 3);
  const auto stored_turns = [&] { return first->store()->load_turns("shared"); };
  REQUIRE(stored_turns().size() == 6);

  const auto check_refused = [&](const char* what, const std::function<void()>& change) {
    CAPTURE(std::string(what));
    std::string message;
    try {
      change();
      FAIL("the change must be refused");
    } catch (const Error& e) {
      CHECK(e.status() == Status::storage);
      message = e.what();
    }
    CHECK(message.find("another engine") != std::string::npos);
    const auto turns = stored_turns();
    REQUIRE(turns.size() == 6);
    CHECK(turns[4].text == "d");
    CHECK(first->store()->load_session("shared")->system_prompt.empty());
  };
  check_refused("rewind", [&] { mine->rewind(2); });
  CHECK(mine->messages().size() == 4);  // nothing changed here either
  check_refused("system prompt", [&] { mine->set_system_prompt("e f"); });
  CHECK(mine->messages().front().text == "a b");
  // The policy is the header's, no message of theirs is at stake: it changes.
  mine->set_overflow(engine::OverflowPolicy::drop_oldest);
  CHECK(first->store()->load_session("shared")->overflow ==
        int32_t(engine::OverflowPolicy::drop_oldest));
  CHECK(stored_turns().size() == 6);
  // Nor is this session's KV stored under the other engine's transcript.
  const auto their_kv = first->store()->load_kv("shared");
  check_refused("spill", [&] { mine->spill(); });
  CHECK_FALSE(mine->spilled());
  const auto kv_now = first->store()->load_kv("shared");
  REQUIRE(kv_now.has_value() == their_kv.has_value());
  if (kv_now) CHECK(kv_now->n_tokens == their_kv->n_tokens);

  // A conversation deleted by the other engine: the same, the policy too.
  theirs.reset();
  second->delete_stored_session("shared");
  CHECK(status_of([&] { mine->rewind(2); }) == Status::storage);
  CHECK(status_of([&] { mine->set_overflow(engine::OverflowPolicy::error); }) ==
        Status::storage);
}

// A rebuild under DROP_OLDEST whose commit failed leaves the store with the conversation from
// before it, whose turn numbers are not the rebuilt one's: a rewind then must not cut the
// stored turns at the rebuilt conversation's numbers.
TEST_CASE("a rewind after a DROP_OLDEST rebuild the disk refused stores what memory holds") {
  FaultyVfs vfs("parley-faulty-rebuild");
  TempDir dir;
  engine::EngineOptions eo;
  eo.model_path = small_synthetic_model();
  eo.kv_type = kv::KvType::f32;
  eo.n_threads = 2;
  eo.context_length = 64;
  eo.store_path = (dir / "s.db").string();
  eo.store_options.vfs = vfs.name();
  auto engine = std::make_shared<engine::Engine>(eo);
  auto o = session_options("", "raw");
  o.id = "rebuilt";
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session s(engine, o);
  // Exchanges until the next one needs a drop.
  const std::string message = "a b c d e f";
  size_t stored_before = 0;
  for (int i = 0; i < 16 && s.tokens().size() + 20 < eo.context_length; ++i) {
    greedy_turn(s, message, 4);
    stored_before = s.messages().size();
  }
  REQUIRE(engine->store()->load_turns("rebuilt").size() == stored_before);
  vfs.fail_writes_after(0, SQLITE_FULL);
  CHECK(status_of([&] { greedy_turn(s, message + " g h i j k l m n o p", 12); }) ==
        Status::storage);
  REQUIRE(s.messages().size() < stored_before + 2);  // older exchanges were dropped
  const auto stored_is_session = [&] {
    const auto stored = engine->store()->load_turns("rebuilt");
    REQUIRE(stored.size() == s.messages().size());
    for (size_t i = 0; i < stored.size(); ++i) {
      CAPTURE(i);
      CHECK(stored[i].text == s.messages()[i].text);
    }
  };
  const auto rewind = [&](uint32_t n) {
    const auto use = s.try_use();
    s.rewind(n);
  };
  // Still full: refused, and nothing changed.
  const size_t rebuilt_size = s.messages().size();
  CHECK(status_of([&] { rewind(2); }) == Status::storage);
  CHECK(s.messages().size() == rebuilt_size);
  CHECK(engine->store()->load_turns("rebuilt").size() == stored_before);
  vfs.clear();
  // What the store then holds is a conversation the session had: all of the rewound one.
  rewind(2);
  stored_is_session();
  greedy_turn(s, "z", 3);
  stored_is_session();
}

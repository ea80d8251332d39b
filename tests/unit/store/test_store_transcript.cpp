// The session store's transcript: sessions and turns written, read back, cut and deleted.
#include <doctest/doctest.h>

#include <thread>

#include "append_turns.h"
#include "common/error.h"
#include "store/store.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::store;

namespace {

StoredSession session_named(const std::string& id, int64_t created_ms = 1000) {
  StoredSession s;
  s.id = id;
  s.model_fingerprint = 0xF00DFACE12345678ull;
  s.chat_template = "llama2";
  s.system_prompt = "You are terse.";
  s.cache_scope = "user-7";
  s.overflow = 1;
  s.created_ms = created_ms;
  s.updated_ms = created_ms;
  return s;
}

StoredTurn turn(int32_t role, std::string text, std::vector<int32_t> ids, bool closed = true) {
  return StoredTurn{role, std::move(text), std::move(ids), closed};
}

void check_same(const StoredTurn& a, const StoredTurn& b) {
  CHECK(a.role == b.role);
  CHECK(a.text == b.text);
  CHECK(a.token_ids == b.token_ids);
  CHECK(a.closed == b.closed);
}

template <class F>
Status status_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

}  // namespace

TEST_CASE("store: a session and its turns round-trip, across reopening") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  StoredSession s = session_named("s1");
  s.model_fingerprint = 0xFFFFFFFFFFFFFFFFull;  // the top bit survives the int64 bit-cast
  s.system_prompt = "Réponds en français. 日本語も OK 👋";

  std::vector<int32_t> many(100000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int32_t>(i * 2654435761u);
  const std::vector<StoredTurn> turns = {
      turn(0, "", {}),  // empty text, no tokens
      turn(1, "héllo wörld — \xF0\x9F\x98\x80 \"quoted\" 'single'",
           {1, -5, 2147483647, -2147483647 - 1}),
      turn(2, std::string("nul\0inside", 10), many, false),  // an embedded NUL, 100k ids
  };
  {
    Store store(path);
    CHECK_FALSE(store.recovery().has_value());
    store.create_session(s);
    append_turns(store, "s1", 0, turns);
  }
  Store store(path);
  const auto loaded = store.load_session("s1");
  REQUIRE(loaded.has_value());
  CHECK(loaded->id == "s1");
  CHECK(loaded->model_fingerprint == s.model_fingerprint);
  CHECK(loaded->chat_template == s.chat_template);
  CHECK(loaded->system_prompt == s.system_prompt);
  CHECK(loaded->cache_scope == s.cache_scope);
  CHECK(loaded->overflow == s.overflow);
  CHECK(loaded->created_ms == s.created_ms);
  CHECK(loaded->updated_ms >= s.updated_ms);  // appending turns moves it forward
  const auto back = store.load_turns("s1");
  REQUIRE(back.size() == turns.size());
  for (size_t i = 0; i < turns.size(); ++i) check_same(back[i], turns[i]);
  CHECK(back[2].text.size() == 10);
}

TEST_CASE("store: turns are added where the transcript ends, and nowhere else") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("s"));
  append_turns(store, "s", 0, std::vector{turn(0, "sys", {1})});
  append_turns(store, "s", 1, std::vector{turn(1, "u", {2, 3}), turn(2, "a", {4})});
  CHECK(store.load_turns("s").size() == 3);
  append_turns(store, "s", 3, {});  // nothing to add is fine
  CHECK(store.load_turns("s").size() == 3);

  const auto one = std::vector{turn(1, "x", {9})};
  CHECK(status_of([&] { append_turns(store, "s", 2, one); }) == Status::invalid_argument);
  CHECK(status_of([&] { append_turns(store, "s", 5, one); }) == Status::invalid_argument);
  CHECK(status_of([&] { append_turns(store, "nobody", 0, one); }) == Status::not_found);
  // A bad role anywhere in the batch rejects the whole batch.
  const auto bad = std::vector{turn(1, "ok", {1}), turn(3, "bad role", {2})};
  CHECK(status_of([&] { append_turns(store, "s", 3, bad); }) == Status::invalid_argument);
  CHECK(status_of([&] { append_turns(store, "s", 3, std::vector{turn(-1, "", {})}); }) ==
        Status::invalid_argument);
  CHECK(store.load_turns("s").size() == 3);  // failed calls changed nothing
}

TEST_CASE("store: replace_turns_from rewrites the last turns, and only a transcript as expected") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("s"));
  append_turns(store, "s", 0, std::vector{turn(1, "u", {2, 3}), turn(2, "a partial", {4})});
  store.replace_turns_from("s", 1, 2, std::vector{turn(2, "a partial reply", {4, 5, 6})});
  auto back = store.load_turns("s");
  REQUIRE(back.size() == 2);
  check_same(back[0], turn(1, "u", {2, 3}));
  check_same(back[1], turn(2, "a partial reply", {4, 5, 6}));
  store.replace_turns_from("s", 2, 2, std::vector{turn(1, "next", {7})});  // an append
  CHECK(store.load_turns("s").size() == 3);

  const auto one = std::vector{turn(2, "x", {9})};
  // Another engine's view of the count: refused, nothing written.
  CHECK(status_of([&] { store.replace_turns_from("s", 2, 2, one); }) ==
        Status::invalid_argument);
  CHECK(status_of([&] { store.replace_turns_from("s", 4, 3, one); }) ==
        Status::invalid_argument);
  CHECK(status_of([&] { store.replace_turns_from("nobody", 0, 0, one); }) == Status::not_found);
  CHECK(status_of([&] { store.replace_turns_from("s", 2, 3, std::vector{turn(5, "", {})}); }) ==
        Status::invalid_argument);
  back = store.load_turns("s");
  REQUIRE(back.size() == 3);
  check_same(back[1], turn(2, "a partial reply", {4, 5, 6}));
  check_same(back[2], turn(1, "next", {7}));
}

// Two stores on one file stand for two engines. The count of turns alone misses a rewrite
// that leaves as many turns, and an id deleted and created again: the revision does not.
TEST_CASE("store: a writer's revision refuses a rewrite with the same count, and a reused id") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  Store mine(path);
  Store theirs(path);
  const int64_t created = mine.create_session(session_named("s")).revision;
  CHECK(mine.load_session("s")->revision == created);
  int64_t seen = mine.replace_turns_from("s", 0, 0, std::vector{turn(1, "a", {1})}, created);
  CHECK(seen > created);
  seen = mine.replace_turns_from("s", 1, 1, std::vector{turn(2, "b", {2})}, seen);
  CHECK(mine.load_conversation("s")->session.revision == seen);
  CHECK(mine.load_conversation("s")->turns.size() == 2);

  // The other writer rewinds two turns and adds two: the count is as this writer left it.
  int64_t their_seen = theirs.load_session("s")->revision;
  their_seen = theirs.truncate_turns("s", 2, 0, 0, their_seen);
  theirs.replace_turns_from("s", 0, 0, std::vector{turn(1, "x", {7}), turn(2, "y", {8})},
                            their_seen);
  const auto next = std::vector{turn(1, "c", {3})};
  CHECK(status_of([&] { mine.replace_turns_from("s", 2, 2, next, seen); }) ==
        Status::invalid_argument);
  CHECK(status_of([&] { mine.truncate_turns("s", 2, 1, 0, seen); }) == Status::invalid_argument);
  CHECK(status_of([&] { mine.replace_turns("s", 2, next, seen); }) == Status::invalid_argument);
  CHECK(status_of([&] { mine.replace_turns("s", 2, "p", next, seen); }) ==
        Status::invalid_argument);
  CHECK(status_of([&] {
          mine.save_kv("s", StoredKv{0, 1, 1, {}, std::vector<std::byte>(4), std::nullopt}, {}, 2,
                       seen);
        }) == Status::invalid_argument);
  auto turns = mine.load_turns("s");
  REQUIRE(turns.size() == 2);
  CHECK(turns[0].text == "x");
  CHECK_FALSE(mine.load_kv("s").has_value());

  // Deleted and created again under the same id, with as many turns: a new revision still.
  seen = mine.load_session("s")->revision;
  theirs.delete_session("s");
  const int64_t again = theirs.create_session(session_named("s")).revision;
  theirs.replace_turns_from("s", 0, 0, std::vector{turn(1, "n", {5}), turn(2, "m", {6})}, again);
  CHECK(status_of([&] { mine.replace_turns_from("s", 2, 2, next, seen); }) ==
        Status::invalid_argument);
  CHECK(mine.load_turns("s")[0].text == "n");
  // Without a revision only the count is checked, as before.
  mine.replace_turns_from("s", 2, 2, next);
  CHECK(mine.load_turns("s").size() == 3);
}

// set_overflow changes the header, not the transcript: its revision stays, its date moves.
TEST_CASE("store: set_overflow commits updated_ms and leaves the revision") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  StoredSession old = session_named("s");
  old.updated_ms = 1000;  // long ago
  const int64_t revision = store.create_session(old).revision;
  store.set_overflow("s", 0);
  const auto after = store.load_session("s");
  CHECK(after->overflow == 0);
  CHECK(after->updated_ms > 1000);
  CHECK(after->revision == revision);
}

TEST_CASE("store: create_session refuses an existing id and an empty one") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("dup"));
  append_turns(store, "dup", 0, std::vector{turn(1, "kept", {7})});
  StoredSession other = session_named("dup");
  other.system_prompt = "replacement";
  try {
    store.create_session(other);
    FAIL("a second session with the same id must be refused");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find("dup") != std::string::npos);
  }
  CHECK(store.load_session("dup")->system_prompt == "You are terse.");
  CHECK(store.load_turns("dup").size() == 1);
  CHECK(status_of([&] { store.create_session(session_named("")); }) == Status::invalid_argument);
}

TEST_CASE("store: truncate_turns keeps a prefix; delete_session removes everything") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("s"));
  append_turns(store, "s", 0,
               std::vector{turn(0, "a", {1}), turn(1, "b", {2}), turn(2, "c", {3}),
                           turn(1, "d", {4})});
  // The writer says how many turns it left there: another count is another writer's change.
  CHECK(status_of([&] { store.truncate_turns("s", 3, 2); }) == Status::invalid_argument);
  CHECK(status_of([&] { store.truncate_turns("s", 5, 2); }) == Status::invalid_argument);
  CHECK(store.load_turns("s").size() == 4);
  store.truncate_turns("s", 4, 2);
  auto turns = store.load_turns("s");
  REQUIRE(turns.size() == 2);
  CHECK(turns[1].text == "b");
  append_turns(store, "s", 2, std::vector{turn(2, "c2", {5})});  // the index continues at 2
  CHECK(store.load_turns("s")[2].text == "c2");
  store.truncate_turns("s", 3, 3);  // keeping all is allowed
  CHECK(status_of([&] { store.truncate_turns("s", 3, 4); }) == Status::invalid_argument);
  CHECK(status_of([&] { store.truncate_turns("nobody", 0, 0); }) == Status::not_found);
  store.truncate_turns("s", 3, 0);
  CHECK(store.load_turns("s").empty());

  store.delete_session("s");
  CHECK_FALSE(store.load_session("s").has_value());
  CHECK(status_of([&] { store.load_turns("s"); }) == Status::not_found);
  CHECK(status_of([&] { store.delete_session("s"); }) == Status::not_found);
  CHECK(status_of([&] { store.delete_session("never"); }) == Status::not_found);
  // The id is free again.
  store.create_session(session_named("s"));
  CHECK(store.load_turns("s").empty());

  // Deleting a session with turns takes its turns along (a leftover row would show up when
  // the id is reused).
  store.create_session(session_named("t"));
  append_turns(store, "t", 0, std::vector{turn(1, "x", {1}), turn(2, "y", {2})});
  store.delete_session("t");
  store.create_session(session_named("t"));
  CHECK(store.load_turns("t").empty());
}

TEST_CASE("store: replace_turns makes the transcript exactly the given turns, and drops KV") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("s"));
  append_turns(store, "s", 0,
               std::vector{turn(0, "sys", {1}), turn(1, "old q", {2}), turn(2, "old a", {3}),
                           turn(1, "q", {4}), turn(2, "a", {5})});
  store.save_kv("s", StoredKv{0, 1, 5, {}, std::vector<std::byte>(10), std::nullopt}, {});
  // A conversation that dropped its oldest exchange keeps the system prompt.
  const auto kept = std::vector{turn(0, "sys", {1}), turn(1, "q", {4}), turn(2, "a", {5})};
  CHECK(status_of([&] { store.replace_turns("s", 4, kept); }) == Status::invalid_argument);
  CHECK(store.load_turns("s").size() == 5);  // refused as another writer's change: untouched
  store.replace_turns("s", 5, kept);
  const auto turns = store.load_turns("s");
  REQUIRE(turns.size() == 3);
  for (size_t i = 0; i < kept.size(); ++i) check_same(turns[i], kept[i]);
  CHECK_FALSE(store.load_kv("s").has_value());
  append_turns(store, "s", 3, std::vector{turn(1, "next", {6})});  // the index continues at 3

  // Longer than before works too; errors change nothing.
  store.replace_turns("s", 4,
                      std::vector{turn(1, "a", {}), turn(2, "b", {}), turn(1, "c", {}),
                                  turn(2, "d", {}), turn(1, "e", {}), turn(2, "f", {})});
  CHECK(store.load_turns("s").size() == 6);
  CHECK(status_of([&] { store.replace_turns("s", 6, std::vector{turn(9, "bad", {})}); }) ==
        Status::invalid_argument);
  CHECK(status_of([&] { store.replace_turns("nobody", 0, kept); }) == Status::not_found);
  CHECK(store.load_turns("s").size() == 6);
  store.replace_turns("s", 6, {});
  CHECK(store.load_turns("s").empty());
}

TEST_CASE("store: replace_turns with a system prompt changes the header's in the same commit") {
  test::TempDir dir;
  const std::string path = (dir / "chat.db").string();
  {
    Store store(path);
    store.create_session(session_named("s"));  // no system prompt
    append_turns(store, "s", 0, std::vector{turn(1, "q", {1, 2}), turn(2, "a", {3})});
    store.save_kv("s", StoredKv{0, 1, 3, {}, std::vector<std::byte>(10), std::nullopt}, {});
    const auto changed = std::vector{turn(0, "be brief", {}), turn(1, "q", {1, 7, 2}),
                                     turn(2, "a", {3})};
    CHECK(status_of([&] { store.replace_turns("s", 1, "x", changed); }) ==
          Status::invalid_argument);  // the session holds 2 turns: another writer's change
    store.replace_turns("s", 2, "be brief", changed);
    CHECK(status_of([&] { store.replace_turns("nobody", 0, "x", changed); }) ==
          Status::not_found);
    CHECK(status_of([&] { store.replace_turns("s", 3, "x", std::vector{turn(7, "", {})}); }) ==
          Status::invalid_argument);
  }
  Store store(path);
  CHECK(store.load_session("s")->system_prompt == "be brief");  // not "x": refused calls
  const auto turns = store.load_turns("s");
  REQUIRE(turns.size() == 3);
  check_same(turns[0], turn(0, "be brief", {}));
  check_same(turns[1], turn(1, "q", {1, 7, 2}));
  CHECK_FALSE(store.load_kv("s").has_value());
  store.replace_turns("s", 3, "", std::vector{turn(1, "q", {1, 2})});
  CHECK(store.load_session("s")->system_prompt.empty());
}

TEST_CASE("store: unknown sessions read as absent") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  CHECK_FALSE(store.load_session("x").has_value());
  CHECK(store.list_sessions().empty());
  CHECK(status_of([&] { store.load_turns("x"); }) == Status::not_found);
}

TEST_CASE("store: list_sessions is ordered by creation time, ties by insertion") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  store.create_session(session_named("late", 300));
  store.create_session(session_named("early", 100));
  store.create_session(session_named("tie-b", 200));
  store.create_session(session_named("tie-a", 200));
  CHECK(store.list_sessions() == std::vector<std::string>{"early", "tie-b", "tie-a", "late"});
  store.delete_session("tie-b");
  CHECK(store.list_sessions() == std::vector<std::string>{"early", "tie-a", "late"});
}

TEST_CASE("store: calls from many threads on one store are serialized") {
  test::TempDir dir;
  Store store((dir / "chat.db").string());
  constexpr int kThreads = 6, kTurns = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      const std::string id = "t" + std::to_string(t);
      store.create_session(session_named(id, t));
      for (int i = 0; i < kTurns; ++i) {
        append_turns(store, id, static_cast<uint32_t>(i),
                     std::vector{turn(1 + i % 2, id + "#" + std::to_string(i), {t, i})});
        if (i % 5 == 0) (void)store.list_sessions();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(store.list_sessions().size() == kThreads);
  for (int t = 0; t < kThreads; ++t) {
    const auto turns = store.load_turns("t" + std::to_string(t));
    REQUIRE(turns.size() == kTurns);
    CHECK(turns[kTurns - 1].token_ids == std::vector<int32_t>{t, kTurns - 1});
  }
}

// The stored KV of a conversation's partially filled last block is taken only for the tokens
// it was computed for. Another engine with an older copy of the conversation (the same full
// blocks, other tokens after them) recomputes that block: its scores and replies are those of
// its own tokens. A store of schema version 2 (tails without a hash) migrates, and its
// conversations resume with the tail recomputed.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "kv/block_layout.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

constexpr uint32_t kBlock = kv::kBlockTokens;

const std::vector<std::string_view> kReplies = {"a b c", "q r", "x y z w"};

std::vector<engine::Session::ReplyScore> scores(engine::Session& s) {
  const auto use = s.try_use();
  REQUIRE(use);
  return s.score_replies("j k", kReplies, true);
}

// A greedy reply to "j k"; what was streamed, also when the turn's commit then failed.
std::string reply_text(engine::Session& s) {
  engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.max_tokens = 12;
  p.ignore_eos = true;
  std::string text;
  engine::TurnStats stats;
  const auto use = s.try_use();
  REQUIRE(use);
  try {
    s.send(
        "j k", p,
        [&](std::string_view piece) {
          text += piece;
          return true;
        },
        stats);
  } catch (const Error& e) {
    CHECK(e.status() == Status::storage);  // the stale copy's turn is refused by the store
  }
  return text;
}

void add_exchange(engine::Session& s, std::string_view user, std::string_view reply) {
  const auto use = s.try_use();
  REQUIRE(use);
  s.add_exchange(user, reply);
}

// The first exchange fills one block and a bit, so both copies share block 0.
void first_exchange(engine::Session& s) {
  add_exchange(s, "a b c d e f g h i", "j k l m n o p q r s");
}
void second_exchange(engine::Session& s) { add_exchange(s, "t u v w", "x y z a b c d"); }
void other_exchange(engine::Session& s) { add_exchange(s, "z z", "y y y"); }

void check_same_scores(const std::vector<engine::Session::ReplyScore>& a,
                       const std::vector<engine::Session::ReplyScore>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t r = 0; r < a.size(); ++r) {
    CAPTURE(r);
    CHECK(a[r].n_tokens == b[r].n_tokens);
    CHECK(a[r].logprob == b[r].logprob);
  }
}

void exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  INFO(sql << ": " << (message ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

int64_t query_int64(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
  const int64_t value = sqlite3_column_int64(statement, 0);
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

}  // namespace

// Engine 1 stores "x"; engine 2 opens it; engine 1 rewinds it, adds another exchange and
// spills: the stored KV is a block both copies share and a tail of engine 1's tokens.
TEST_CASE("another engine's stored KV tail for other tokens is recomputed, not taken") {
  TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  auto first = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  auto second = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  engine::SessionOptions options = session_options("", "raw");
  options.id = "x";
  {
    engine::Session s(first, options);
    first_exchange(s);
    second_exchange(s);
  }  // closed: its KV is stored
  auto stale = engine::Session::open(second, "x");
  std::vector<int32_t> rewritten_tokens;
  {
    auto rewritten = engine::Session::open(first, "x");
    {
      const auto use = rewritten->try_use();
      rewritten->rewind(2);
    }
    other_exchange(*rewritten);
    rewritten_tokens = rewritten->tokens();
    const auto use = rewritten->try_use();
    REQUIRE(rewritten->spill());
  }

  // What the case is about: the stored full blocks are the stale copy's too, its tail is not,
  // and the stale copy has tokens past it (so the counts alone would let it be taken).
  const auto kv = first->store()->load_kv("x");
  REQUIRE(kv.has_value());
  const std::vector<int32_t> stale_tokens = stale->tokens();
  const uint32_t full = kv->n_tokens / kBlock * kBlock;
  REQUIRE(full >= kBlock);
  REQUIRE(kv->n_tokens > full);
  REQUIRE(kv->tail_blob.size() > 0);
  REQUIRE(stale_tokens.size() > kv->n_tokens);
  REQUIRE(std::equal(stale_tokens.begin(), stale_tokens.begin() + full, rewritten_tokens.begin()));
  REQUIRE_FALSE(std::equal(stale_tokens.begin() + full, stale_tokens.begin() + kv->n_tokens,
                           rewritten_tokens.begin() + full));

  // The reference: the same conversation in an engine without a store.
  auto reference_engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session reference(reference_engine, session_options("", "raw"));
  first_exchange(reference);
  second_exchange(reference);
  REQUIRE(reference.tokens() == stale_tokens);

  SUBCASE("scores") { check_same_scores(scores(*stale), scores(reference)); }
  SUBCASE("a reply") {
    CHECK(reply_text(*stale) == reply_text(reference));
    const auto a = stale->last_logits();
    const auto b = reference.last_logits();
    CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  SUBCASE("prepare, then scores") {
    engine::TurnStats stats;
    {
      const auto use = stale->try_use();
      stale->prepare(stats);
    }
    CHECK(stats.kv_source == engine::KvSource::rebuilt);
    CHECK(stats.reused_tokens == full);  // the shared block came back, the tail did not
    check_same_scores(scores(*stale), scores(reference));
  }
}

// The tail's own conversation still takes it: nothing is recomputed.
TEST_CASE("a stored KV tail comes back for the conversation it was computed for") {
  TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  engine::Session resident(engine, session_options("", "raw", "resident"));
  engine::SessionOptions options = session_options("", "raw");
  options.id = "x";
  {
    engine::Session s(engine, options);
    first_exchange(s);
    second_exchange(s);
  }
  first_exchange(resident);
  second_exchange(resident);
  const auto kv = engine->store()->load_kv("x");
  REQUIRE(kv.has_value());
  REQUIRE(kv->n_tokens % kBlock != 0);
  CHECK(kv->tail_hash.has_value());

  auto reopened = engine::Session::open(engine, "x");
  engine::TurnStats stats;
  {
    const auto use = reopened->try_use();
    reopened->prepare(stats);
  }
  CHECK(stats.kv_source == engine::KvSource::restored);
  CHECK(stats.reused_tokens == kv->n_tokens);
  check_same_scores(scores(*reopened), scores(resident));
}

// A file version 2 made: its KV rows have no tail hash. It migrates; its tails are not known
// to belong to their conversations, so they are recomputed, and the full blocks come back.
TEST_CASE("a version 2 store migrates; its stored KV resumes with the tail recomputed") {
  TempDir dir;
  const std::string path = (dir / "s.db").string();
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {path});
    engine::SessionOptions options = session_options("", "raw");
    options.id = "x";
    engine::Session s(engine, options);
    first_exchange(s);
    second_exchange(s);
  }  // closed with the engine: the KV is stored
  exec(path, "ALTER TABLE kv_sessions DROP COLUMN tail_hash; PRAGMA user_version = 2");
  REQUIRE(query_int64(path, "SELECT n_tokens % 16 FROM kv_sessions") != 0);

  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {path});
  CHECK(query_int64(path, "PRAGMA user_version") == 3);
  CHECK(query_int64(path, "SELECT value FROM meta WHERE key = 'compatible_version'") == 1);
  CHECK(query_int64(path, "SELECT tail_hash IS NULL FROM kv_sessions") == 1);
  const auto kv = engine->store()->load_kv("x");
  REQUIRE(kv.has_value());
  CHECK_FALSE(kv->tail_hash.has_value());

  auto reopened = engine::Session::open(engine, "x");
  engine::Session reference(engine, session_options("", "raw", "reference"));
  first_exchange(reference);
  second_exchange(reference);
  REQUIRE(reopened->tokens() == reference.tokens());
  engine::TurnStats stats;
  {
    const auto use = reopened->try_use();
    reopened->prepare(stats);
  }
  CHECK(stats.kv_source == engine::KvSource::rebuilt);
  CHECK(stats.reused_tokens == kv->n_tokens / kBlock * kBlock);
  check_same_scores(scores(*reopened), scores(reference));
  CHECK(reply_text(*reopened) == reply_text(reference));

  // Its next spill stores the tail with its hash, and the next restore takes it.
  {
    const auto use = reopened->try_use();
    REQUIRE(reopened->spill());
  }
  CHECK(query_int64(path, "SELECT tail_hash IS NOT NULL FROM kv_sessions") == 1);
  engine::TurnStats again;
  const auto use = reopened->try_use();
  reopened->prepare(again);
  CHECK(again.kv_source == engine::KvSource::restored);
}

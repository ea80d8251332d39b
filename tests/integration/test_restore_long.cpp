// A long conversation (more full blocks than one restore batch decodes at once) comes back
// whole from the store after a restart, equal bit for bit to one never spilled; a damaged
// block in the second batch costs the blocks from it on, and only those.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <cstring>

#include "session_fixture.h"
#include "store/store.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;

namespace {

constexpr uint32_t kReply = 6;

const std::string& long_restore_model() {
  SynthSpec spec;
  spec.context_length = 2048;
  spec.n_kv_heads = 1;
  return synthetic_gguf_once("long-restore", spec);
}

// About 1,300 tokens of plain words: over 80 full blocks.
std::string long_text() {
  std::string t;
  for (int i = 0; i < 1300; ++i) t += std::string(1, char('a' + i % 26)) + " ";
  return t;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Replaces the stored blob of the conversation's full block `block` with bytes that do not
// decode.
void damage_block(const std::string& db, const std::string& id, size_t block) {
  uint64_t hash = 0;
  {
    store::Store store(db);
    const auto kv = store.load_kv(id);
    REQUIRE(kv);
    REQUIRE(kv->full_block_hashes.size() > block);
    hash = kv->full_block_hashes[block];
  }
  sqlite3* conn = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &conn) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(conn, "UPDATE prefix_blocks SET blob = x'00112233' WHERE hash = ?",
                             -1, &st, nullptr) == SQLITE_OK);
  sqlite3_bind_int64(st, 1, int64_t(hash));
  REQUIRE(sqlite3_step(st) == SQLITE_DONE);
  sqlite3_finalize(st);
  CHECK(sqlite3_changes(conn) == 1);
  sqlite3_close(conn);
}

}  // namespace

TEST_CASE("a long conversation restores whole, and a damaged block costs only what follows it") {
  auto reference_engine = open_engine(long_restore_model(), kv::KvType::int8);
  engine::Session reference(reference_engine, session_options("", "raw"));
  greedy_turn(reference, long_text(), kReply);
  const size_t first_turn_tokens = reference.tokens().size();
  REQUIRE(first_turn_tokens / kv::kBlockTokens > 70);
  greedy_turn(reference, " and then", kReply);

  for (const bool damaged : {false, true}) {
    CAPTURE(damaged);
    TempDir dir;
    const std::string db = (dir / "s.db").string();
    auto o = session_options("", "raw");
    o.id = "long";
    {
      auto engine = open_engine_with_store(long_restore_model(), kv::KvType::int8, {db});
      engine::Session s(engine, o);
      greedy_turn(s, long_text(), kReply);
    }  // closing spills the KV
    constexpr size_t kDamagedBlock = 70;  // in the second batch of blocks decoded together
    if (damaged) damage_block(db, "long", kDamagedBlock);

    auto engine = open_engine_with_store(long_restore_model(), kv::KvType::int8, {db});
    auto s = engine::Session::open(engine, "long");
    const auto stats = greedy_turn(*s, " and then", kReply);
    if (damaged) {
      CHECK(stats.kv_source == engine::KvSource::rebuilt);
      CHECK(stats.reused_tokens == kDamagedBlock * kv::kBlockTokens);
    } else {
      CHECK(stats.kv_source == engine::KvSource::restored);
      // All but the first turn's last token (always recomputed for its logits) came back.
      CHECK(stats.reused_tokens == first_turn_tokens - 1);
    }
    CHECK(s->tokens() == reference.tokens());
    CHECK(same_bits(s->last_logits(), reference.last_logits()));
  }
}

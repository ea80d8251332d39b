// A stored prefix block whose blob is damaged costs one rebuild: the next spill of a session
// that holds it writes the recomputed blob in its place, so that every session sharing the
// block restores it again. So too a blob whose header claims another model: the block's hash
// is this model's, so the header is what is damaged.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "session_fixture.h"
#include "store/kv_codec.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

using Blob = std::vector<std::byte>;

// The store file opened directly, while no engine has it.
class StoreFile {
 public:
  explicit StoreFile(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
  }
  ~StoreFile() { sqlite3_close(db_); }
  StoreFile(const StoreFile&) = delete;
  StoreFile& operator=(const StoreFile&) = delete;

  int64_t count(const std::string& sql) {
    sqlite3_stmt* statement = prepare(sql);
    REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return n;
  }
  uint64_t block_hash(const std::string& session, int block_index) {
    return uint64_t(count("SELECT hash FROM kv_block_refs WHERE session_id = '" + session +
                          "' AND block_index = " + std::to_string(block_index)));
  }
  Blob block_blob(uint64_t hash) {
    sqlite3_stmt* statement = prepare("SELECT blob FROM prefix_blocks WHERE hash = ?");
    sqlite3_bind_int64(statement, 1, int64_t(hash));
    REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
    const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(statement, 0));
    Blob blob(p, p + sqlite3_column_bytes(statement, 0));
    sqlite3_finalize(statement);
    return blob;
  }
  void set_block_blob(uint64_t hash, const Blob& blob) {
    sqlite3_stmt* statement = prepare("UPDATE prefix_blocks SET blob = ? WHERE hash = ?");
    sqlite3_bind_blob(statement, 1, blob.data(), int(blob.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(statement, 2, int64_t(hash));
    REQUIRE(sqlite3_step(statement) == SQLITE_DONE);
    sqlite3_finalize(statement);
  }

 private:
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    REQUIRE_MESSAGE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK,
                    sqlite3_errmsg(db_));
    return statement;
  }
  sqlite3* db_ = nullptr;
};

engine::SessionOptions options_named(const std::string& id) {
  auto o = session_options("x y", "llama2");
  o.id = id;
  return o;
}

// Sessions `ids`, each with the same first exchange: they share its full blocks in the store.
void store_sessions_sharing_blocks(const std::string& db, const std::vector<std::string>& ids) {
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  for (const std::string& id : ids) {
    engine::Session s(engine, options_named(id));
    greedy_turn(s, "a b c d e", 16);
  }  // each spills as it closes
}

struct Resumed {
  engine::TurnStats stats;
  size_t tokens_before = 0;  // the conversation's length before the turn
};

// Opens the stored session in a fresh engine (nothing in its prefix cache) for one short
// turn; the session spills again as it closes.
Resumed resume_in_fresh_engine(const std::string& db, const std::string& id) {
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  auto s = engine::Session::open(engine, id);
  Resumed resumed;
  resumed.tokens_before = s->tokens().size();
  resumed.stats = greedy_turn(*s, "f", 2);
  return resumed;
}

// All the stored KV came back: only the last token (never stored) and the new ones computed.
bool all_restored(const Resumed& resumed) {
  return resumed.stats.kv_source == engine::KvSource::restored &&
         resumed.stats.reused_tokens == resumed.tokens_before - 1;
}

}  // namespace

TEST_CASE("a damaged prefix block is rebuilt once, then restored by every session sharing it") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  store_sessions_sharing_blocks(db, {"a", "b"});
  uint64_t hash = 0;
  Blob damaged;
  {
    StoreFile file(db);
    REQUIRE(file.count("SELECT count(*) FROM kv_block_refs WHERE session_id = 'b'") >= 2);
    hash = file.block_hash("a", 0);
    REQUIRE(file.block_hash("b", 0) == hash);
    damaged = file.block_blob(hash);
    damaged[damaged.size() / 2] ^= std::byte{0x55};  // fails the checksum
    file.set_block_blob(hash, damaged);
  }

  const auto rebuilt = resume_in_fresh_engine(db, "a").stats;
  CHECK(rebuilt.kv_source == engine::KvSource::rebuilt);
  CHECK(rebuilt.reused_tokens == 0);  // the damaged block is the first: all is recomputed
  const auto check_references = [&] {
    StoreFile file(db);
    // Both sessions still reference the one row; every stored block is referenced.
    CHECK(file.count("SELECT count(*) FROM kv_block_refs WHERE hash = " +
                     std::to_string(int64_t(hash))) == 2);
    CHECK(file.count("SELECT count(*) FROM prefix_blocks") ==
          file.count("SELECT count(DISTINCT hash) FROM kv_block_refs"));
    return file.block_blob(hash);
  };
  CHECK(check_references() != damaged);  // a's spill wrote the recomputed blob
  // b never saw the damage: it restores the block a rewrote; so does a, from now on.
  CHECK(all_restored(resume_in_fresh_engine(db, "b")));
  CHECK(all_restored(resume_in_fresh_engine(db, "a")));
  check_references();
}

TEST_CASE("a prefix block whose header claims another model is damaged: rewritten once") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  store_sessions_sharing_blocks(db, {"a"});
  uint64_t fingerprint = 0;
  {
    auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
    fingerprint = engine->model().fingerprint;
  }
  uint64_t hash = 0;
  Blob foreign;
  {
    StoreFile file(db);
    hash = file.block_hash("a", 0);
    const kv::BlockLayout layout(kv::KvType::int8, kv::KvShape{2, 1, 16});
    std::vector<std::byte> block(layout.block_bytes());
    const auto info =
        store::decode_kv_block(file.block_blob(hash), layout, fingerprint, block.data());
    foreign = store::encode_kv_block(layout, fingerprint + 1, block.data(), info.n_tokens);
    file.set_block_blob(hash, foreign);
  }
  CHECK(resume_in_fresh_engine(db, "a").stats.kv_source == engine::KvSource::rebuilt);
  {
    StoreFile file(db);
    CHECK(file.block_blob(hash) != foreign);
  }
  CHECK(all_restored(resume_in_fresh_engine(db, "a")));
}

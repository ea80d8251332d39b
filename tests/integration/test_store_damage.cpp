// Stored KV that is damaged, cut short, in a legacy zstd frame, of the wrong size or made for
// another model never breaks a conversation: it is recomputed from the stored tokens
// (kv_source REBUILT) and the reply is the same as if nothing had happened. A stored token
// the vocabulary lacks is refused as what it says of the conversation.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <functional>

#include "session_fixture.h"
#include "store/kv_codec.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

using Blob = std::vector<std::byte>;
using Tamper = std::function<Blob(const Blob&)>;

// Rewrites every stored KV blob (prefix blocks and session tails) through `tamper`.
void tamper_blobs(const std::string& db, const Tamper& tamper) {
  sqlite3* conn = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &conn) == SQLITE_OK);
  const char* tables[][2] = {{"prefix_blocks", "blob"}, {"kv_sessions", "tail_blob"}};
  for (const auto& [table, column] : tables) {
    const std::string select = std::string("SELECT rowid, ") + column + " FROM " + table +
                               " WHERE " + column + " IS NOT NULL";
    sqlite3_stmt* read = nullptr;
    REQUIRE(sqlite3_prepare_v2(conn, select.c_str(), -1, &read, nullptr) == SQLITE_OK);
    std::vector<std::pair<int64_t, Blob>> rows;
    while (sqlite3_step(read) == SQLITE_ROW) {
      const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(read, 1));
      rows.push_back({sqlite3_column_int64(read, 0), Blob(p, p + sqlite3_column_bytes(read, 1))});
    }
    sqlite3_finalize(read);
    const std::string update = std::string("UPDATE ") + table + " SET " + column + " = ? WHERE rowid = ?";
    for (auto& [rowid, blob] : rows) {
      const Blob changed = tamper(blob);
      sqlite3_stmt* write = nullptr;
      REQUIRE(sqlite3_prepare_v2(conn, update.c_str(), -1, &write, nullptr) == SQLITE_OK);
      if (changed.empty()) {
        sqlite3_bind_zeroblob(write, 1, 0);  // a zero-length blob, not NULL
      } else {
        sqlite3_bind_blob(write, 1, changed.data(), int(changed.size()), SQLITE_TRANSIENT);
      }
      sqlite3_bind_int64(write, 2, rowid);
      REQUIRE(sqlite3_step(write) == SQLITE_DONE);
      sqlite3_finalize(write);
    }
  }
  sqlite3_close(conn);
}

// The position of the zstd frame's magic number (28 B5 2F FD) in a blob.
size_t frame_magic_at(const Blob& b) {
  const std::byte magic[] = {std::byte{0x28}, std::byte{0xB5}, std::byte{0x2F}, std::byte{0xFD}};
  for (size_t i = 0; i + 4 <= b.size(); ++i) {
    if (std::equal(magic, magic + 4, b.begin() + long(i))) return i;
  }
  FAIL("no zstd frame in the blob");
  return 0;
}

const Tamper kTampers[] = {
    [](const Blob& b) {  // damaged payload
      Blob c = b;
      for (size_t i = c.size() / 2; i < c.size(); i += 7) c[i] ^= std::byte{0x5A};
      return c;
    },
    [](const Blob& b) { return Blob(b.begin(), b.begin() + long(b.size() * 2 / 3)); },  // cut
    [](const Blob& b) {  // a legacy (v0.5) zstd frame magic, which libzstd would still decode
      Blob c = b;
      c[frame_magic_at(c)] = std::byte{0x25};
      return c;
    },
    [](const Blob& b) {  // wrong size: trailing bytes
      Blob c = b;
      c.insert(c.end(), 9, std::byte{0});
      return c;
    },
    [](const Blob&) { return Blob(); },  // empty
};
const char* kTamperNames[] = {"damaged", "truncated", "legacy zstd", "wrong size", "empty"};

}  // namespace

TEST_CASE("damaged stored KV is rebuilt and the reply is unchanged") {
  auto reference_engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session reference(reference_engine, session_options("x y", "llama2"));
  greedy_turn(reference, "a b c d e", 30);
  greedy_turn(reference, "f g", 12);

  for (size_t k = 0; k < std::size(kTampers); ++k) {
    CAPTURE(kTamperNames[k]);
    TempDir dir;
    const std::string db = (dir / "s.db").string();
    auto o = session_options("x y", "llama2");
    o.id = "victim";
    {
      auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
      engine::Session s(engine, o);
      greedy_turn(s, "a b c d e", 30);
    }
    tamper_blobs(db, kTampers[k]);
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
    auto s = engine::Session::open(engine, "victim");
    const auto stats = greedy_turn(*s, "f g", 12);
    CHECK(stats.kv_source == engine::KvSource::rebuilt);
    CHECK(s->tokens() == reference.tokens());
  }
}

TEST_CASE("stored KV made for another model is rebuilt") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto o = session_options("", "raw");
  o.id = "other-model";
  std::vector<int32_t> tokens;
  uint64_t fingerprint = 0;
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
    fingerprint = engine->model().fingerprint;
    engine::Session s(engine, o);
    greedy_turn(s, "a b c", 40);
    tokens = s.tokens();
  }
  // Re-encode every block as if another model had computed it.
  const kv::BlockLayout layout(kv::KvType::int8, kv::KvShape{2, 1, 16});
  tamper_blobs(db, [&](const Blob& b) {
    std::vector<std::byte> block(layout.block_bytes());
    const auto info = store::decode_kv_block(b, layout, fingerprint, block.data());
    return store::encode_kv_block(layout, fingerprint + 1, block.data(), info.n_tokens);
  });
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  auto s = engine::Session::open(engine, "other-model");
  const auto stats = greedy_turn(*s, "d", 5);
  CHECK(stats.kv_source == engine::KvSource::rebuilt);
  CHECK(std::equal(tokens.begin(), tokens.end(), s->tokens().begin()));
}

// A stored token this model's vocabulary lacks: the conversation is another model's when it
// was started with one (MODEL_MISMATCH), else it is damaged (CORRUPT).
TEST_CASE("a stored token outside the vocabulary: MODEL_MISMATCH for another model's, CORRUPT") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto o = session_options("", "raw");
  o.id = "tokens";
  uint64_t fingerprint = 0;
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
    fingerprint = engine->model().fingerprint;
    engine::Session s(engine, o);
    greedy_turn(s, "a b c", 4);
  }
  const auto edit = [&](const std::string& sql) {
    sqlite3* conn = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &conn) == SQLITE_OK);
    REQUIRE_MESSAGE(sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK,
                    sqlite3_errmsg(conn));
    sqlite3_close(conn);
  };
  // Id 1000 (int32, little-endian) as the reply's first token; the vocabulary has 320.
  edit(
      "UPDATE turns SET token_ids = CAST(X'E8030000' || substr(token_ids, 5) AS BLOB) "
      "WHERE idx = 1");
  Status status = Status::ok;
  SUBCASE("started with another model") {
    edit("UPDATE sessions SET model_fingerprint = " + std::to_string(int64_t(fingerprint + 1)));
    status = Status::model_mismatch;
  }
  SUBCASE("started with this model") { status = Status::corrupt; }
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  try {
    engine::Session::open(engine, "tokens");
    FAIL("the conversation opened");
  } catch (const Error& e) {
    CHECK(e.status() == status);
    CHECK_MESSAGE(std::string(e.what()).find("token 1000") != std::string::npos,
                  std::string(e.what()));
  }
}

#include "store/kv_rows.h"

#include <algorithm>
#include <bit>

#include "common/shown_id.h"
#include "kv/block_layout.h"

namespace parley::store::kv_rows {
namespace {

int64_t as_integer(uint64_t hash) { return std::bit_cast<int64_t>(hash); }
uint64_t as_hash(int64_t value) { return std::bit_cast<uint64_t>(value); }

std::vector<uint64_t> referenced_hashes(Connection& db, const std::string& id) {
  auto statement = db.statement("SELECT hash FROM kv_block_refs WHERE session_id = ?1",
                                "select block references");
  statement->bind_text(1, id);
  std::vector<uint64_t> hashes;
  while (statement->step()) hashes.push_back(as_hash(statement->int64_at(0)));
  return hashes;
}

void delete_if_unreferenced(Connection& db, uint64_t hash) {
  auto statement = db.statement(
      "DELETE FROM prefix_blocks WHERE hash = ?1"
      " AND NOT EXISTS (SELECT 1 FROM kv_block_refs WHERE hash = ?1)",
      "delete unreferenced prefix block");
  statement->bind_int64(1, as_integer(hash)).run();
}

}  // namespace

bool has_prefix_block(Connection& db, uint64_t hash) {
  auto statement =
      db.statement("SELECT 1 FROM prefix_blocks WHERE hash = ?1", "look up prefix block");
  statement->bind_int64(1, as_integer(hash));
  return statement->step();
}

void insert_prefix_block_if_absent(Connection& db, uint64_t hash, std::span<const std::byte> blob) {
  auto statement = db.statement(
      "INSERT INTO prefix_blocks (hash, blob) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
      "insert prefix block");
  statement->bind_int64(1, as_integer(hash)).bind_blob(2, blob).run();
}

void upsert_prefix_block(Connection& db, uint64_t hash, std::span<const std::byte> blob) {
  auto statement = db.statement(
      "INSERT INTO prefix_blocks (hash, blob) VALUES (?1, ?2)"
      " ON CONFLICT (hash) DO UPDATE SET blob = excluded.blob",
      "replace prefix block");
  statement->bind_int64(1, as_integer(hash)).bind_blob(2, blob).run();
}

std::optional<std::vector<std::byte>> select_prefix_block(Connection& db, uint64_t hash) {
  auto statement =
      db.statement("SELECT blob FROM prefix_blocks WHERE hash = ?1", "select prefix block");
  statement->bind_int64(1, as_integer(hash));
  if (!statement->step()) return std::nullopt;
  const auto blob = statement->blob_at(0);
  return std::vector<std::byte>(blob.begin(), blob.end());
}

void insert_session_kv(Connection& db, const std::string& id, const StoredKv& kv) {
  {
    auto statement = db.statement(
        "INSERT INTO kv_sessions"
        " (session_id, model_fingerprint, kv_type, n_tokens, tail_blob, tail_hash)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        "insert session KV");
    statement->bind_text(1, id)
        .bind_int64(2, as_integer(kv.model_fingerprint))
        .bind_int64(3, kv.kv_type)
        .bind_int64(4, kv.n_tokens)
        .bind_blob(5, kv.tail_blob);
    if (kv.tail_hash) {
      statement->bind_int64(6, as_integer(*kv.tail_hash));
    } else {
      statement->bind_null(6);
    }
    statement->run();
  }
  auto statement =
      db.statement("INSERT INTO kv_block_refs (session_id, block_index, hash) VALUES (?1, ?2, ?3)",
                   "insert block reference");
  for (size_t i = 0; i < kv.full_block_hashes.size(); ++i) {
    statement->bind_text(1, id)
        .bind_int64(2, static_cast<int64_t>(i))
        .bind_int64(3, as_integer(kv.full_block_hashes[i]))
        .run();
    statement->reset();
  }
}

std::optional<KvOrigin> select_kv_origin(Connection& db, const std::string& id) {
  auto statement =
      db.statement("SELECT model_fingerprint, kv_type FROM kv_sessions WHERE session_id = ?1",
                   "select KV origin");
  statement->bind_text(1, id);
  if (!statement->step()) return std::nullopt;
  return KvOrigin{as_hash(statement->int64_at(0)), static_cast<int32_t>(statement->int64_at(1))};
}

std::optional<StoredKv> select_session_kv(Connection& db, const std::string& id) {
  StoredKv kv;
  {
    auto statement = db.statement(
        "SELECT model_fingerprint, kv_type, n_tokens, tail_blob, tail_hash FROM kv_sessions"
        " WHERE session_id = ?1",
        "select session KV");
    statement->bind_text(1, id);
    if (!statement->step()) return std::nullopt;
    kv.model_fingerprint = as_hash(statement->int64_at(0));
    kv.kv_type = static_cast<int32_t>(statement->int64_at(1));
    const int64_t n_tokens = statement->int64_at(2);
    require(n_tokens >= 0 && n_tokens <= UINT32_MAX, Status::corrupt,
            "session " + shown_id(id) + ": stored KV has an impossible token count");
    kv.n_tokens = static_cast<uint32_t>(n_tokens);
    const auto tail = statement->blob_at(3);
    kv.tail_blob.assign(tail.begin(), tail.end());
    if (!statement->is_null(4)) kv.tail_hash = as_hash(statement->int64_at(4));
  }
  auto statement = db.statement(
      "SELECT block_index, hash FROM kv_block_refs WHERE session_id = ?1 ORDER BY block_index",
      "select block references");
  statement->bind_text(1, id);
  while (statement->step()) {
    require(statement->int64_at(0) == static_cast<int64_t>(kv.full_block_hashes.size()),
            Status::corrupt, "session " + shown_id(id) + ": stored KV misses a block reference");
    kv.full_block_hashes.push_back(as_hash(statement->int64_at(1)));
  }
  return kv;
}

std::vector<uint64_t> delete_session_kv_rows(Connection& db, const std::string& id) {
  std::vector<uint64_t> hashes = referenced_hashes(db, id);
  // Cascades to the session's kv_block_refs.
  auto statement =
      db.statement("DELETE FROM kv_sessions WHERE session_id = ?1", "delete session KV");
  statement->bind_text(1, id).run();
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return hashes;
}

void delete_blocks_if_unreferenced(Connection& db, std::span<const uint64_t> hashes) {
  for (const uint64_t hash : hashes) delete_if_unreferenced(db, hash);
}

void delete_session_kv(Connection& db, const std::string& id) {
  delete_blocks_if_unreferenced(db, delete_session_kv_rows(db, id));
}

void trim_session_kv(Connection& db, const std::string& id, uint32_t n_tokens) {
  std::optional<StoredKv> stored = select_session_kv(db, id);
  if (!stored || n_tokens >= stored->n_tokens) return;
  constexpr uint32_t kBlock = parley::kv::kBlockTokens;
  const size_t n_full = std::min<size_t>(stored->full_block_hashes.size(), n_tokens / kBlock);
  if (n_full == 0) {
    delete_session_kv(db, id);
    return;
  }
  const std::vector<uint64_t> previous = delete_session_kv_rows(db, id);
  stored->full_block_hashes.resize(n_full);
  stored->tail_blob.clear();
  stored->tail_hash.reset();
  stored->n_tokens = uint32_t(n_full * kBlock);
  insert_session_kv(db, id, *stored);
  delete_blocks_if_unreferenced(db, previous);
}

uint64_t session_kv_bytes(Connection& db, const std::string& id) {
  auto statement = db.statement(
      "SELECT (SELECT coalesce(sum(length(tail_blob)), 0) FROM kv_sessions WHERE session_id = ?1)"
      " + (SELECT coalesce(sum(length(p.blob)), 0) FROM kv_block_refs AS r"
      "    JOIN prefix_blocks AS p ON p.hash = r.hash WHERE r.session_id = ?1)",
      "measure session KV");
  statement->bind_text(1, id);
  statement->step();
  return static_cast<uint64_t>(statement->int64_at(0));
}

}  // namespace parley::store::kv_rows

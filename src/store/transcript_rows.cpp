#include "store/transcript_rows.h"

#include <bit>

#include "common/shown_id.h"

namespace parley::store::transcript_rows {
namespace {

constexpr int32_t kLastRole = 2;  // PARLEY_ROLE_ASSISTANT

StoredTurn turn_from_row(const Statement& row, int first_column) {
  StoredTurn turn;
  const int64_t role = row.int64_at(first_column);
  require(role >= 0 && role <= kLastRole, Status::corrupt,
          "stored turn has an unknown role " + std::to_string(role));
  turn.role = static_cast<int32_t>(role);
  turn.text = row.text_at(first_column + 1);
  turn.token_ids = decode_token_ids(row.blob_at(first_column + 2));
  turn.closed = row.int64_at(first_column + 3) != 0;
  return turn;
}

// Reads ids from one query until it ends or fails: on a damaged file a scan may break off.
// Whether the source was read to its end.
bool collect_ids(Connection& db, std::string_view sql, std::set<std::string>& ids) {
  try {
    auto statement = db.statement(sql, "salvage session ids");
    while (statement->step()) ids.insert(statement->text_at(0));
    return true;
  } catch (const Error&) {
    return false;  // keep what was read before the damaged page
  }
}

}  // namespace

std::vector<std::byte> encode_token_ids(std::span<const int32_t> ids) {
  std::vector<std::byte> blob(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto u = static_cast<uint32_t>(ids[i]);
    for (size_t b = 0; b < 4; ++b) blob[i * 4 + b] = static_cast<std::byte>(u >> (8 * b));
  }
  return blob;
}

std::vector<int32_t> decode_token_ids(std::span<const std::byte> blob) {
  require(blob.size() % 4 == 0, Status::corrupt,
          "stored token ids are " + std::to_string(blob.size()) + " bytes, not a multiple of 4");
  std::vector<int32_t> ids(blob.size() / 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint32_t u = 0;
    for (size_t b = 0; b < 4; ++b) u |= std::to_integer<uint32_t>(blob[i * 4 + b]) << (8 * b);
    ids[i] = static_cast<int32_t>(u);
  }
  return ids;
}

void insert_session(Connection& db, const StoredSession& s) {
  auto statement = db.statement(
      "INSERT INTO sessions (id, model_fingerprint, chat_template, system_prompt, cache_scope,"
      " overflow, created_ms, updated_ms, n_turns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)",
      "insert session");
  statement->bind_text(1, s.id)
      .bind_int64(2, std::bit_cast<int64_t>(s.model_fingerprint))
      .bind_text(3, s.chat_template)
      .bind_text(4, s.system_prompt)
      .bind_text(5, s.cache_scope)
      .bind_int64(6, s.overflow)
      .bind_int64(7, s.created_ms)
      .bind_int64(8, s.updated_ms)
      .run();
}

std::optional<SessionRow> select_session(Connection& db, const std::string& id, Lookup lookup,
                                         Revision revision) {
  const std::string sql =
      std::string(
          "SELECT model_fingerprint, chat_template, system_prompt, cache_scope, overflow,"
          " created_ms, updated_ms, n_turns, ") +
      (revision == Revision::read ? "revision, created_revision" : "0, 0") + " FROM sessions" +
      (lookup == Lookup::by_index ? "" : " NOT INDEXED") + " WHERE id = ?1";
  auto statement = db.statement(sql, "select session");
  statement->bind_text(1, id);
  if (!statement->step()) return std::nullopt;
  SessionRow row;
  row.session.id = id;
  row.session.model_fingerprint = std::bit_cast<uint64_t>(statement->int64_at(0));
  row.session.chat_template = statement->text_at(1);
  row.session.system_prompt = statement->text_at(2);
  row.session.cache_scope = statement->text_at(3);
  row.session.overflow = static_cast<int32_t>(statement->int64_at(4));
  row.session.created_ms = statement->int64_at(5);
  row.session.updated_ms = statement->int64_at(6);
  row.n_turns = statement->int64_at(7);
  row.session.revision = statement->int64_at(8);
  row.session.created_revision = statement->int64_at(9);
  require(row.n_turns >= 0, Status::corrupt,
          "session " + shown_id(id) + " has a negative turn count");
  return row;
}

std::vector<std::string> select_session_ids(Connection& db) {
  auto statement =
      db.statement("SELECT id FROM sessions ORDER BY created_ms, rowid", "list sessions");
  std::vector<std::string> ids;
  while (statement->step()) ids.push_back(statement->text_at(0));
  return ids;
}

int64_t select_revision(Connection& db, const std::string& id) {
  auto statement = db.statement("SELECT revision FROM sessions WHERE id = ?1", "read revision");
  statement->bind_text(1, id);
  require(statement->step(), Status::not_found, "no stored session " + shown_id(id));
  return statement->int64_at(0);
}

void update_turn_count(Connection& db, const std::string& id, int64_t n_turns, int64_t updated_ms) {
  auto statement = db.statement("UPDATE sessions SET n_turns = ?2, updated_ms = ?3 WHERE id = ?1",
                                "update turn count");
  statement->bind_text(1, id).bind_int64(2, n_turns).bind_int64(3, updated_ms).run();
}

void update_system_prompt(Connection& db, const std::string& id, const std::string& system_prompt) {
  auto statement = db.statement("UPDATE sessions SET system_prompt = ?2 WHERE id = ?1",
                                "update system prompt");
  statement->bind_text(1, id).bind_text(2, system_prompt).run();
}

void update_overflow(Connection& db, const std::string& id, int32_t overflow, int64_t updated_ms) {
  auto statement = db.statement("UPDATE sessions SET overflow = ?2, updated_ms = ?3 WHERE id = ?1",
                                "update overflow policy");
  statement->bind_text(1, id).bind_int64(2, overflow).bind_int64(3, updated_ms).run();
}

bool delete_session(Connection& db, const std::string& id) {
  auto statement = db.statement("DELETE FROM sessions WHERE id = ?1", "delete session");
  statement->bind_text(1, id).run();
  return sqlite3_changes(db.handle()) > 0;
}

void insert_turn(Connection& db, const std::string& id, int64_t idx, const StoredTurn& turn) {
  const std::vector<std::byte> token_blob = encode_token_ids(turn.token_ids);
  auto statement = db.statement(
      "INSERT INTO turns (session_id, idx, role, text, token_ids, closed)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
      "insert turn");
  statement->bind_text(1, id)
      .bind_int64(2, idx)
      .bind_int64(3, turn.role)
      .bind_text(4, turn.text)
      .bind_blob(5, token_blob)
      .bind_int64(6, turn.closed ? 1 : 0)
      .run();
}

std::vector<StoredTurn> select_turns(Connection& db, const std::string& id, int64_t n_turns) {
  auto statement = db.statement(
      "SELECT idx, role, text, token_ids, closed FROM turns WHERE session_id = ?1 ORDER BY idx",
      "select turns");
  statement->bind_text(1, id);
  std::vector<StoredTurn> turns;
  while (statement->step()) {
    const int64_t idx = statement->int64_at(0);
    const auto expected = static_cast<int64_t>(turns.size());
    require(idx == expected, Status::corrupt,
            "session " + shown_id(id) + ": turn " + std::to_string(expected) +
                " is missing (found " + std::to_string(idx) + ")");
    turns.push_back(turn_from_row(*statement, 1));
  }
  require(static_cast<int64_t>(turns.size()) == n_turns, Status::corrupt,
          "session " + shown_id(id) + " has " + std::to_string(turns.size()) +
              " stored turns, expected " + std::to_string(n_turns));
  return turns;
}

std::optional<StoredTurn> select_turn(Connection& db, const std::string& id, int64_t idx,
                                      Lookup lookup) {
  auto statement = db.statement(
      lookup == Lookup::by_index
          ? "SELECT role, text, token_ids, closed FROM turns WHERE session_id = ?1 AND idx = ?2"
          : "SELECT role, text, token_ids, closed FROM turns NOT INDEXED"
            " WHERE session_id = ?1 AND idx = ?2",
      "select turn");
  statement->bind_text(1, id).bind_int64(2, idx);
  if (!statement->step()) return std::nullopt;
  return turn_from_row(*statement, 0);
}

void delete_turns_from(Connection& db, const std::string& id, int64_t first_deleted) {
  auto statement =
      db.statement("DELETE FROM turns WHERE session_id = ?1 AND idx >= ?2", "delete turns");
  statement->bind_text(1, id).bind_int64(2, first_deleted).run();
}

SalvagedIds salvage_session_ids(Connection& db) {
  SalvagedIds found;
  auto& ids = found.ids;
  const bool table = collect_ids(db, "SELECT id FROM sessions NOT INDEXED", ids);
  const bool index =
      collect_ids(db, "SELECT id FROM sessions INDEXED BY sqlite_autoindex_sessions_1", ids);
  found.complete = table || index;
  collect_ids(db, "SELECT DISTINCT session_id FROM turns NOT INDEXED", ids);
  collect_ids(db, "SELECT DISTINCT session_id FROM turns INDEXED BY sqlite_autoindex_turns_1", ids);
  return found;
}

}  // namespace parley::store::transcript_rows

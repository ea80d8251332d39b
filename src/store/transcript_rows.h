// Rows of the sessions and turns tables. Callers hold the transaction; these functions only
// read and write rows (and check what they read back: a bad row is Error(corrupt)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "store/connection.h"
#include "store/store.h"

namespace parley::store::transcript_rows {

// Token ids <-> the turns.token_ids blob: int32 little-endian, whatever the host's order.
std::vector<std::byte> encode_token_ids(std::span<const int32_t> ids);
std::vector<int32_t> decode_token_ids(std::span<const std::byte> blob);  // Error(corrupt)

// How a row is looked up: through the primary-key index, or by scanning the table (salvage
// reads of a damaged file try both, since either b-tree may be the broken one).
enum class Lookup { by_index, by_table_scan };

struct SessionRow {
  StoredSession session;  // session.revision and created_revision included
  int64_t n_turns = 0;
};

void insert_session(Connection& db, const StoredSession& session);
// Salvage reads of a damaged file skip the revision: an older file has no such column.
enum class Revision { read, skip };
std::optional<SessionRow> select_session(Connection& db, const std::string& id,
                                         Lookup lookup = Lookup::by_index,
                                         Revision revision = Revision::read);
std::vector<std::string> select_session_ids(Connection& db);  // by creation time, then insertion
// The revision the triggers gave the row by the writes so far (read it before committing).
int64_t select_revision(Connection& db, const std::string& id);
void update_turn_count(Connection& db, const std::string& id, int64_t n_turns, int64_t updated_ms);
void update_system_prompt(Connection& db, const std::string& id, const std::string& system_prompt);
void update_overflow(Connection& db, const std::string& id, int32_t overflow, int64_t updated_ms);
bool delete_session(Connection& db, const std::string& id);  // false: no such row

void insert_turn(Connection& db, const std::string& id, int64_t idx, const StoredTurn& turn);
// Turns 0 .. n_turns-1 in order; Error(corrupt) for a gap, an extra row, a bad role or blob.
std::vector<StoredTurn> select_turns(Connection& db, const std::string& id, int64_t n_turns);
std::optional<StoredTurn> select_turn(Connection& db, const std::string& id, int64_t idx,
                                      Lookup lookup);
void delete_turns_from(Connection& db, const std::string& id, int64_t first_deleted);

// Every session id this connection can still find in sessions or turns, through their tables
// and their indexes; a source that fails partway contributes what it read before failing.
// `complete`: the sessions table or its index was read to its end, so no session is missing.
struct SalvagedIds {
  std::set<std::string> ids;
  bool complete = false;
};
SalvagedIds salvage_session_ids(Connection& db);

}  // namespace parley::store::transcript_rows

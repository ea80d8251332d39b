// Rows of the KV tables: a session's KV (kv_sessions + kv_block_refs) and the shared,
// content-addressed prefix_blocks. Callers hold the transaction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/connection.h"
#include "store/store.h"

namespace parley::store::kv_rows {

bool has_prefix_block(Connection& db, uint64_t hash);
void insert_prefix_block_if_absent(Connection& db, uint64_t hash, std::span<const std::byte> blob);
// Inserts the block, or rewrites the stored blob of the hash: its references stay as they are.
void upsert_prefix_block(Connection& db, uint64_t hash, std::span<const std::byte> blob);
std::optional<std::vector<std::byte>> select_prefix_block(Connection& db, uint64_t hash);

// Writes the session's KV rows; the session must have none (delete_session_kv first) and
// every referenced prefix block must be stored already.
void insert_session_kv(Connection& db, const std::string& id, const StoredKv& kv);
// Who computed the session's stored KV, without reading its blobs; nullopt: none stored.
struct KvOrigin {
  uint64_t model_fingerprint;
  int32_t kv_type;  // PARLEY_KV_*
};
std::optional<KvOrigin> select_kv_origin(Connection& db, const std::string& id);
// Error(corrupt) when the block references are not 0 .. k-1.
std::optional<StoredKv> select_session_kv(Connection& db, const std::string& id);
// Deletes the session's KV rows; returns the prefix blocks they referenced (which may now be
// unreferenced: pass them to delete_blocks_if_unreferenced once new references are written).
std::vector<uint64_t> delete_session_kv_rows(Connection& db, const std::string& id);
void delete_blocks_if_unreferenced(Connection& db, std::span<const uint64_t> hashes);
// Both of the above: the session's KV and the prefix blocks nobody references any more.
void delete_session_kv(Connection& db, const std::string& id);
// Keeps the session's KV of its first n_tokens tokens: all of it when it holds no more, else
// the whole blocks within them (no tail blob), or nothing when no block is left.
void trim_session_kv(Connection& db, const std::string& id, uint32_t n_tokens);
// Tail blob plus every referenced prefix block (shared ones included), in bytes.
uint64_t session_kv_bytes(Connection& db, const std::string& id);

}  // namespace parley::store::kv_rows

// The session store: one SQLite file that holds every conversation's transcript (the source
// of truth, committed turn by turn) and, as a rebuildable cache, the KV of spilled sessions.
// Full KV blocks are stored once, content-addressed by their chained prefix hash, and shared
// by every session that has them; a session's partially filled last block is its own blob.
// Thread-safety: any thread (calls are serialized inside). Every failure of SQLite is
// Error(storage) with SQLite's message; a call that fails changes nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"

namespace parley::store {

struct StoredSession {
  std::string id;
  uint64_t model_fingerprint = 0;  // the model the session was created with
  std::string chat_template;       // "raw", "llama2", ...
  std::string system_prompt;
  std::string cache_scope;
  int32_t overflow = 0;            // PARLEY_OVERFLOW_*
  int64_t created_ms = 0;          // Unix time
  int64_t updated_ms = 0;
  // Read back only: the transcript's change marker. Every write of the transcript (or of the
  // system prompt) gives it the next value of a store-wide counter, so it never repeats, not
  // even for an id deleted and created again.
  int64_t revision = 0;
  int64_t created_revision = 0;  // read back only: the revision it was inserted with
};

// What a listing shows of a stored conversation without reading its turns.
struct StoredSummary {
  StoredSession session;
  uint32_t n_turns = 0;
  uint64_t kv_bytes = 0;  // its stored KV, shared prefix blocks included
  // Who computed the stored KV (what decides whether it can be restored); unset when none.
  std::optional<uint64_t> kv_model_fingerprint;
  int32_t kv_type = 0;  // PARLEY_KV_*, with kv_model_fingerprint
};

struct StoredTurn {
  int32_t role = 0;                // PARLEY_ROLE_*
  std::string text;
  std::vector<int32_t> token_ids;  // the ids this message added to the conversation
  bool closed = true;              // an assistant reply that ended with its end token
};

// The KV a session had when it was spilled: positions [0, n_tokens).
struct StoredKv {
  uint64_t model_fingerprint = 0;
  int32_t kv_type = 0;                       // PARLEY_KV_*
  uint32_t n_tokens = 0;
  std::vector<uint64_t> full_block_hashes;   // blocks 0 .. k-1, each a prefix block
  std::vector<std::byte> tail_blob;          // the partially filled block k, or empty
  // The chained hash of the tail's tokens (kv::partial_block_hash after block k - 1): the tail
  // is restored only for a conversation with those tokens there. Unset: not known (a row
  // older code wrote), so the tail is recomputed.
  std::optional<uint64_t> tail_hash;
};

struct PrefixBlob {
  uint64_t hash;
  std::vector<std::byte> blob;
  // The stored blob of this hash failed its checks when read (checksum, decode): this one
  // takes its place, for every session that shares it. Else a stored blob is kept as it is.
  bool replaces_damaged = false;
};

struct StoreOptions {
  std::string vfs;  // SQLite VFS name; "" = the default (tests inject failures with their own)
  int busy_timeout_ms = 5000;  // how long a call waits for another connection's write lock
};

// What opening a store that failed its integrity check recovered.
struct RecoveryReport {
  std::string moved_aside_to;             // the damaged file's new name
  std::vector<std::string> recovered;     // session ids whose transcripts were copied
  std::vector<std::string> truncated;     // copied up to the first turn that could not be read
  std::vector<std::string> lost;          // session ids that could not be read
  std::string unreadable;  // why the damaged file could not be opened at all ("" = it could)
  bool all_listed = true;  // every session's id was found (else some are lost unnamed)
};

// Store::save_kv's refusal of a block that is neither stored nor given (invalid_argument).
class PrefixBlockMissing : public Error {
 public:
  using Error::Error;
};

class Store {
 public:
  // Opens or creates the file: schema migrations, pragmas, quick_check. A file that fails the
  // check is never deleted: every transcript still readable is copied into a new file, which
  // takes its place as it is renamed aside (recover_damaged_store), and recovery() says what
  // happened. Throws Error(storage) when the file cannot be opened or created, Error(corrupt)
  // for a file that is not a Parley store (another application_id) or from a newer
  // incompatible version.
  explicit Store(const std::string& path, const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::optional<RecoveryReport>& recovery() const;

  // Transcript. Each call is one transaction committed with synchronous=FULL: when it
  // returns, the data survives a crash or power loss. Every write first checks that the file
  // is still the one opened (not moved, replaced or deleted since): else Error(storage).
  // Writes of the transcript return its new revision (StoredSession::revision). A writer
  // passes the revision it last saw (read or returned): another one means another writer (an
  // engine on the same file) changed the conversation since, or deleted it and made another
  // under the same id; the call is then refused with Error(invalid_argument).

  // The session and its first turns, in one transaction: a failure leaves no trace of it.
  // Error(invalid_argument) if the id exists.
  struct Created {
    int64_t revision = 0;          // after the turns
    int64_t created_revision = 0;  // the header's (StoredSession::created_revision)
  };
  Created create_session(const StoredSession& session, std::span<const StoredTurn> turns = {});
  // Turns first_index on become `turns` (a last reply that went on). The session must hold
  // n_stored turns, first_index <= n_stored: fewer or more means another engine wrote to it.
  // The KV stays: it still describes the ids the kept turns start with.
  int64_t replace_turns_from(const std::string& id, uint32_t first_index, uint32_t n_stored,
                             std::span<const StoredTurn> turns,
                             std::optional<int64_t> revision = std::nullopt);
  // Keeps the first `keep` turns of the n_stored the session must hold (as above). The
  // session's KV keeps the whole blocks of its first `keep_kv_tokens` tokens (the ids the kept
  // turns still start with) and drops the rest.
  int64_t truncate_turns(const std::string& id, uint32_t n_stored, uint32_t keep,
                         uint32_t keep_kv_tokens = 0,
                         std::optional<int64_t> revision = std::nullopt);
  // The session's n_stored turns (as above) become exactly `turns`, in one transaction (a
  // conversation rebuilt after dropping its oldest exchanges); also drops its KV.
  int64_t replace_turns(const std::string& id, uint32_t n_stored, std::span<const StoredTurn> turns,
                        std::optional<int64_t> revision = std::nullopt);
  // The same with a new system prompt (the conversation's opening rendered again).
  int64_t replace_turns(const std::string& id, uint32_t n_stored, const std::string& system_prompt,
                        std::span<const StoredTurn> turns,
                        std::optional<int64_t> revision = std::nullopt);
  // The session's PARLEY_OVERFLOW_* policy, and its updated_ms; Error(not_found). A header
  // change, not the transcript's: the revision stays and is not checked (another writer's
  // turns change nothing the policy is about), but created_revision is: a conversation
  // deleted and started again under the id is refused, as above.
  void set_overflow(const std::string& id, int32_t overflow,
                    std::optional<int64_t> created_revision = std::nullopt);
  void delete_session(const std::string& id);  // transcript and KV; Error(not_found)
  std::optional<StoredSession> load_session(const std::string& id);
  // Error(corrupt) when a turn cannot be read back (a bad token blob, a gap in the indexes).
  std::vector<StoredTurn> load_turns(const std::string& id);
  // The session and its turns from one snapshot, so that its revision is theirs; as above.
  struct Conversation {
    StoredSession session;
    std::vector<StoredTurn> turns;
  };
  std::optional<Conversation> load_conversation(const std::string& id);
  std::vector<std::string> list_sessions();  // by creation time
  std::optional<StoredSummary> session_summary(const std::string& id);  // one snapshot

  // KV. save_kv replaces the session's stored KV in one transaction and inserts the prefix
  // blobs that are not stored yet (and rewrites those marked replaces_damaged); it may use
  // synchronous=NORMAL (KV can be rebuilt).
  bool has_prefix_block(uint64_t hash);
  // With n_stored (and revision), the session must hold that many turns (at that revision,
  // as above): KV is never stored under a transcript another writer changed. The revision
  // stays: the transcript did not change. A block neither stored nor among new_blobs is
  // PrefixBlockMissing: has_prefix_block said it was there, but the last session that shared
  // it let go of it since (deleted, rewound); the caller gives its blob and saves again.
  void save_kv(const std::string& id, const StoredKv& kv, std::span<const PrefixBlob> new_blobs,
               std::optional<uint32_t> n_stored = std::nullopt,
               std::optional<int64_t> revision = std::nullopt);
  std::optional<StoredKv> load_kv(const std::string& id);
  std::optional<std::vector<std::byte>> load_prefix_block(uint64_t hash);
  void drop_kv(const std::string& id);  // and prefix blocks no session references any more
  uint64_t kv_bytes(const std::string& id);  // stored bytes of the session's KV (shared included)
  uint64_t file_bytes();

 private:
  // Both replace_turns: the system prompt too when not null.
  int64_t replace_turns(const std::string& id, uint32_t n_stored, const std::string* system_prompt,
                        std::span<const StoredTurn> turns, std::optional<int64_t> revision);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::store

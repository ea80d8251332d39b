#include "store/store.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "common/shown_id.h"
#include "store/connection.h"
#include "store/kv_rows.h"
#include "store/store_open.h"
#include "store/transcript_rows.h"

namespace parley::store {
namespace {

constexpr int32_t kLastRole = 2;                 // PARLEY_ROLE_ASSISTANT
constexpr std::optional<Synchronous> kReadOnly;  // reads leave the synchronous setting alone

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

transcript_rows::SessionRow require_session(Connection& db, const std::string& id) {
  auto row = transcript_rows::select_session(db, id);
  if (!row) fail(Status::not_found, "no stored session " + shown_id(id));
  return *row;
}

// A writer states how many turns it last left in the session; another count means another
// writer (an engine on the same file) changed the conversation since.
void require_turn_count(const transcript_rows::SessionRow& row, const std::string& id,
                        uint32_t n_stored) {
  require(row.n_turns == n_stored, Status::invalid_argument,
          "session " + shown_id(id) + " holds " + std::to_string(row.n_turns) + " turns, not the " +
              std::to_string(n_stored) + " its writer left");
}

// The count alone misses a rewrite that left as many turns, and an id deleted and created
// again: the revision (never handed out twice) changes with every write of the transcript.
void require_revision(const transcript_rows::SessionRow& row, const std::string& id,
                      std::optional<int64_t> revision) {
  require(!revision || row.session.revision == *revision, Status::invalid_argument, [&] {
    return "session " + shown_id(id) + " is at revision " + std::to_string(row.session.revision) +
           ", not the " + std::to_string(*revision) +
           " its writer last saw: it was rewritten, or deleted and created again";
  });
}

// The session row as the writer last left it (see the two above).
transcript_rows::SessionRow require_as_left(Connection& db, const std::string& id,
                                            uint32_t n_stored, std::optional<int64_t> revision) {
  auto row = require_session(db, id);
  require_turn_count(row, id, n_stored);
  require_revision(row, id, revision);
  return row;
}

void require_known_roles(const char* call, std::span<const StoredTurn> turns) {
  for (const StoredTurn& turn : turns) {
    require(turn.role >= 0 && turn.role <= kLastRole, Status::invalid_argument,
            std::string(call) + ": unknown role " + std::to_string(turn.role));
  }
}

// In the caller's transaction: the session's turns from first_index on become `turns`.
void write_turns_from(Connection& db, const std::string& id,
                      const transcript_rows::SessionRow& row, uint32_t first_index,
                      std::span<const StoredTurn> turns) {
  if (first_index < row.n_turns) transcript_rows::delete_turns_from(db, id, first_index);
  for (size_t i = 0; i < turns.size(); ++i) {
    transcript_rows::insert_turn(db, id, static_cast<int64_t>(first_index + i), turns[i]);
  }
  transcript_rows::update_turn_count(db, id, first_index + static_cast<int64_t>(turns.size()),
                                     std::max(now_ms(), row.session.updated_ms));
}

// Commits a write of the session's transcript; its revision, as the triggers left it.
int64_t commit_revision(Connection& db, WriteTransaction& transaction, const std::string& id) {
  const int64_t revision = transcript_rows::select_revision(db, id);
  transaction.commit();
  return revision;
}

}  // namespace

struct Store::Impl {
  std::mutex mutex;
  std::unique_ptr<Connection> db;
  std::optional<RecoveryReport> recovery;

  // Runs one store call under the lock; a write first sets the durability it needs. SQLite's
  // errors get the call's name in front ("replace_turns_from: commit: database or disk is full");
  // any transaction the body opened has been rolled back by then.
  template <class Body>
  auto call(const char* name, std::optional<Synchronous> durability, Body&& body)
      -> decltype(body(*db)) {
    std::lock_guard lock(mutex);
    try {
      // No call leaves a transaction open, but one that failed while SQLite had no memory
      // may not have managed to roll back: that leftover goes first.
      if (db->in_transaction()) db->exec("ROLLBACK", "roll back an unfinished transaction");
      if (durability) db->set_synchronous(*durability);
      return body(*db);
    } catch (const SqliteError& e) {
      throw e.reworded(std::string(name) + ": " + e.what());
    }
  }
};

Store::Store(const std::string& path, const StoreOptions& options)
    : impl_(std::make_unique<Impl>()) {
  OpenedStore opened;
  try {
    opened = open_store(path, options);
  } catch (const SqliteError& e) {
    // Where the disk is full, which step of the opening met it tells the reader nothing.
    if (e.out_of_room()) {
      const std::string why = e.sqlite_text().empty() ? "" : " (" + e.sqlite_text() + ")";
      throw e.reworded("opening " + path + ": its disk has no room for the store" + why +
                       "; free space on its disk (or raise the file size limit) and open the "
                       "engine again");
    }
    throw e.reworded("opening " + path + ": " + e.what());
  }
  impl_->db = std::move(opened.db);
  impl_->recovery = std::move(opened.recovery);
}

Store::~Store() = default;

const std::optional<RecoveryReport>& Store::recovery() const { return impl_->recovery; }

// Transcript writes run with synchronous=FULL: COMMIT returns only after the WAL is on disk.

Store::Created Store::create_session(const StoredSession& session,
                                     std::span<const StoredTurn> turns) {
  require(!session.id.empty(), Status::invalid_argument, "create_session: empty session id");
  require_known_roles("create_session", turns);
  return impl_->call("create_session", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    require(!transcript_rows::select_session(db, session.id), Status::invalid_argument,
            "create_session: session " + shown_id(session.id) + " already exists");
    transcript_rows::insert_session(db, session);
    Created created;
    created.created_revision = transcript_rows::select_revision(db, session.id);
    if (!turns.empty()) {
      const auto row = transcript_rows::select_session(db, session.id);
      write_turns_from(db, session.id, *row, 0, turns);
    }
    created.revision = commit_revision(db, transaction, session.id);
    return created;
  });
}

int64_t Store::replace_turns_from(const std::string& id, uint32_t first_index, uint32_t n_stored,
                                  std::span<const StoredTurn> turns,
                                  std::optional<int64_t> revision) {
  require_known_roles("replace_turns_from", turns);
  require(first_index <= n_stored, Status::invalid_argument,
          "replace_turns_from: turn " + std::to_string(first_index) + " is past the " +
              std::to_string(n_stored) + " stored");
  return impl_->call("replace_turns_from", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    const auto row = require_as_left(db, id, n_stored, revision);
    write_turns_from(db, id, row, first_index, turns);
    return commit_revision(db, transaction, id);
  });
}

int64_t Store::truncate_turns(const std::string& id, uint32_t n_stored, uint32_t keep,
                              uint32_t keep_kv_tokens, std::optional<int64_t> revision) {
  require(keep <= n_stored, Status::invalid_argument,
          "truncate_turns: cannot keep " + std::to_string(keep) + " of " +
              std::to_string(n_stored) + " turns");
  return impl_->call("truncate_turns", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    const auto row = require_as_left(db, id, n_stored, revision);
    transcript_rows::delete_turns_from(db, id, keep);
    transcript_rows::update_turn_count(db, id, keep, std::max(now_ms(), row.session.updated_ms));
    // The KV described the dropped turns too: only whole blocks of the kept ids stay.
    kv_rows::trim_session_kv(db, id, keep_kv_tokens);
    return commit_revision(db, transaction, id);
  });
}

int64_t Store::replace_turns(const std::string& id, uint32_t n_stored,
                             std::span<const StoredTurn> turns, std::optional<int64_t> revision) {
  return replace_turns(id, n_stored, nullptr, turns, revision);
}

int64_t Store::replace_turns(const std::string& id, uint32_t n_stored,
                             const std::string& system_prompt, std::span<const StoredTurn> turns,
                             std::optional<int64_t> revision) {
  return replace_turns(id, n_stored, &system_prompt, turns, revision);
}

int64_t Store::replace_turns(const std::string& id, uint32_t n_stored,
                             const std::string* system_prompt, std::span<const StoredTurn> turns,
                             std::optional<int64_t> revision) {
  require_known_roles("replace_turns", turns);
  return impl_->call("replace_turns", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    const auto row = require_as_left(db, id, n_stored, revision);
    if (system_prompt) transcript_rows::update_system_prompt(db, id, *system_prompt);
    transcript_rows::delete_turns_from(db, id, 0);
    for (size_t i = 0; i < turns.size(); ++i) {
      transcript_rows::insert_turn(db, id, static_cast<int64_t>(i), turns[i]);
    }
    transcript_rows::update_turn_count(db, id, static_cast<int64_t>(turns.size()),
                                       std::max(now_ms(), row.session.updated_ms));
    kv_rows::delete_session_kv(db, id);  // it held the old conversation
    return commit_revision(db, transaction, id);
  });
}

void Store::set_overflow(const std::string& id, int32_t overflow,
                         std::optional<int64_t> created_revision) {
  impl_->call("set_overflow", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    const auto row = require_session(db, id);
    require(!created_revision || row.session.created_revision == *created_revision,
            Status::invalid_argument, [&] {
              return "session " + shown_id(id) +
                     " was deleted and created again since its writer read it";
            });
    transcript_rows::update_overflow(db, id, overflow, std::max(now_ms(), row.session.updated_ms));
    transaction.commit();
  });
}

void Store::delete_session(const std::string& id) {
  impl_->call("delete_session", Synchronous::full, [&](Connection& db) {
    WriteTransaction transaction(db);
    require_session(db, id);
    // Explicitly first: the cascade from sessions would leave unreferenced prefix blocks.
    kv_rows::delete_session_kv(db, id);
    transcript_rows::delete_session(db, id);
    transaction.commit();
  });
}

std::optional<StoredSession> Store::load_session(const std::string& id) {
  return impl_->call("load_session", kReadOnly,
                     [&](Connection& db) -> std::optional<StoredSession> {
                       auto row = transcript_rows::select_session(db, id);
                       if (!row) return std::nullopt;
                       return std::move(row->session);
                     });
}

std::vector<StoredTurn> Store::load_turns(const std::string& id) {
  return impl_->call("load_turns", kReadOnly, [&](Connection& db) {
    ReadTransaction snapshot(db);
    const auto row = require_session(db, id);
    return transcript_rows::select_turns(db, id, row.n_turns);
  });
}

std::optional<Store::Conversation> Store::load_conversation(const std::string& id) {
  return impl_->call("load_conversation", kReadOnly,
                     [&](Connection& db) -> std::optional<Conversation> {
                       ReadTransaction snapshot(db);
                       auto row = transcript_rows::select_session(db, id);
                       if (!row) return std::nullopt;
                       auto turns = transcript_rows::select_turns(db, id, row->n_turns);
                       return Conversation{std::move(row->session), std::move(turns)};
                     });
}

std::optional<StoredSummary> Store::session_summary(const std::string& id) {
  return impl_->call("session_summary", kReadOnly,
                     [&](Connection& db) -> std::optional<StoredSummary> {
                       ReadTransaction snapshot(db);
                       auto row = transcript_rows::select_session(db, id);
                       if (!row) return std::nullopt;
                       StoredSummary s;
                       s.session = std::move(row->session);
                       s.n_turns = static_cast<uint32_t>(row->n_turns);
                       s.kv_bytes = kv_rows::session_kv_bytes(db, id);
                       if (const auto origin = kv_rows::select_kv_origin(db, id)) {
                         s.kv_model_fingerprint = origin->model_fingerprint;
                         s.kv_type = origin->kv_type;
                       }
                       return s;
                     });
}

std::vector<std::string> Store::list_sessions() {
  return impl_->call("list_sessions", kReadOnly,
                     [&](Connection& db) { return transcript_rows::select_session_ids(db); });
}

// KV writes may run with synchronous=NORMAL: a KV lost to a power cut is rebuilt from turns.

bool Store::has_prefix_block(uint64_t hash) {
  return impl_->call("has_prefix_block", kReadOnly,
                     [&](Connection& db) { return kv_rows::has_prefix_block(db, hash); });
}

void Store::save_kv(const std::string& id, const StoredKv& kv,
                    std::span<const PrefixBlob> new_blobs, std::optional<uint32_t> n_stored,
                    std::optional<int64_t> revision) {
  for (const PrefixBlob& blob : new_blobs) {
    // A blob no block refers to would never be deleted.
    require(std::find(kv.full_block_hashes.begin(), kv.full_block_hashes.end(), blob.hash) !=
                kv.full_block_hashes.end(),
            Status::invalid_argument,
            "save_kv: prefix blob " + std::to_string(blob.hash) +
                " is not one of the session's blocks");
  }
  impl_->call("save_kv", Synchronous::normal, [&](Connection& db) {
    WriteTransaction transaction(db);
    const auto row = require_session(db, id);
    if (n_stored) require_turn_count(row, id, *n_stored);
    require_revision(row, id, revision);
    const std::vector<uint64_t> previous = kv_rows::delete_session_kv_rows(db, id);
    for (const PrefixBlob& blob : new_blobs) {
      if (blob.replaces_damaged) {
        kv_rows::upsert_prefix_block(db, blob.hash, blob.blob);
      } else {
        kv_rows::insert_prefix_block_if_absent(db, blob.hash, blob.blob);
      }
    }
    for (size_t i = 0; i < kv.full_block_hashes.size(); ++i) {
      if (kv_rows::has_prefix_block(db, kv.full_block_hashes[i])) continue;
      throw PrefixBlockMissing(Status::invalid_argument,
                               "save_kv: block " + std::to_string(i) + " (hash " +
                                   std::to_string(kv.full_block_hashes[i]) +
                                   ") is neither stored nor among the new blobs");
    }
    kv_rows::insert_session_kv(db, id, kv);
    // Only now: a block the old KV and the new one share must not be dropped in between.
    kv_rows::delete_blocks_if_unreferenced(db, previous);
    transaction.commit();
  });
}

std::optional<StoredKv> Store::load_kv(const std::string& id) {
  return impl_->call("load_kv", kReadOnly, [&](Connection& db) {
    ReadTransaction snapshot(db);
    return kv_rows::select_session_kv(db, id);
  });
}

std::optional<std::vector<std::byte>> Store::load_prefix_block(uint64_t hash) {
  return impl_->call("load_prefix_block", kReadOnly,
                     [&](Connection& db) { return kv_rows::select_prefix_block(db, hash); });
}

void Store::drop_kv(const std::string& id) {
  impl_->call("drop_kv", Synchronous::normal, [&](Connection& db) {
    WriteTransaction transaction(db);
    kv_rows::delete_session_kv(db, id);
    transaction.commit();
  });
}

uint64_t Store::kv_bytes(const std::string& id) {
  return impl_->call("kv_bytes", kReadOnly,
                     [&](Connection& db) { return kv_rows::session_kv_bytes(db, id); });
}

uint64_t Store::file_bytes() {
  return impl_->call("file_bytes", kReadOnly, [&](Connection& db) {
    // The database as readers see it (main file plus committed WAL frames), free pages included.
    const int64_t pages = db.query_int64("PRAGMA page_count", "read page_count");
    const int64_t page_size = db.query_int64("PRAGMA page_size", "read page_size");
    return static_cast<uint64_t>(pages * page_size);
  });
}

}  // namespace parley::store

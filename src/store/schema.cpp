#include "store/schema.h"

namespace parley::store {

// u64 values (hashes, fingerprints) are stored as INTEGER through a bit-cast to int64.
std::string_view content_schema_v1() {
  return R"sql(
-- Settings of the file. 'compatible_version': the oldest schema version whose code can use it.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,  -- the setting's name
  value                             -- its value (any type)
);

CREATE TABLE sessions (
  id                TEXT PRIMARY KEY NOT NULL,    -- chosen by the application, unique
  model_fingerprint INTEGER NOT NULL,             -- the model the session was created with
  chat_template     TEXT NOT NULL,                -- template name: 'raw', 'llama2', ...
  system_prompt     TEXT NOT NULL,                -- UTF-8, may be empty
  cache_scope       TEXT NOT NULL,                -- prefix-sharing scope of the session's KV
  overflow          INTEGER NOT NULL,             -- PARLEY_OVERFLOW_* policy
  created_ms        INTEGER NOT NULL,             -- Unix time in ms; sessions are listed by it
  updated_ms        INTEGER NOT NULL,             -- Unix time in ms of the last transcript change
  n_turns           INTEGER NOT NULL DEFAULT 0    -- turns rows of this session: idx 0 .. n_turns-1
);
CREATE INDEX sessions_by_creation ON sessions(created_ms);

CREATE TABLE turns (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,  -- owning session
  idx        INTEGER NOT NULL,    -- 0-based position in the conversation
  role       INTEGER NOT NULL,    -- PARLEY_ROLE_*: 0 system, 1 user, 2 assistant
  text       TEXT NOT NULL,       -- the message as UTF-8, may be empty
  token_ids  BLOB NOT NULL,       -- ids this message added: int32 little-endian, 4 bytes each
  closed     INTEGER NOT NULL,    -- 1: ended with its end token; 0: cut short (length, stop)
  PRIMARY KEY (session_id, idx)
);
)sql";
}

std::string_view kv_schema_v1() {
  return R"sql(
CREATE TABLE kv_sessions (
  session_id        TEXT PRIMARY KEY NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  model_fingerprint INTEGER NOT NULL,  -- the model that computed this KV
  kv_type           INTEGER NOT NULL,  -- PARLEY_KV_*
  n_tokens          INTEGER NOT NULL,  -- the KV holds positions [0, n_tokens)
  tail_blob         BLOB NOT NULL      -- codec blob of the partially filled last block, or empty
);

-- Which prefix block is the session's block number block_index (its full blocks, in order).
CREATE TABLE kv_block_refs (
  session_id  TEXT NOT NULL REFERENCES kv_sessions(session_id) ON DELETE CASCADE,
  block_index INTEGER NOT NULL,                             -- 0-based block position
  hash        INTEGER NOT NULL REFERENCES prefix_blocks(hash),  -- chained prefix hash of the block
  PRIMARY KEY (session_id, block_index)
) WITHOUT ROWID;
-- Finds whether a block is still referenced before it is deleted.
CREATE INDEX kv_block_refs_by_hash ON kv_block_refs(hash);

-- Full KV blocks, stored once however many sessions share them; a row is deleted when the
-- last reference to it goes.
CREATE TABLE prefix_blocks (
  hash INTEGER PRIMARY KEY,  -- chained prefix hash: the content address
  blob BLOB NOT NULL         -- codec blob of the full block
);
)sql";
}

// Every insert of a session and every change of its transcript (each one rewrites n_turns,
// a new system prompt rewrites that) gives the row the next value of one store-wide counter:
// a writer that states the revision it last saw finds out that another engine changed the
// conversation, also when the turn count came out equal or the id was deleted and reused.
// Triggers, not code: version 1 code writing the file keeps the revisions honest too. The
// revision a row was inserted with stays as created_revision: a header change (the overflow
// policy) checks that one, so it does not land on a conversation started again under the id.
std::string_view revision_schema_v2() {
  return R"sql(
ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;  -- see the triggers
ALTER TABLE sessions ADD COLUMN created_revision INTEGER NOT NULL DEFAULT 0;  -- its first
INSERT INTO meta (key, value) VALUES ('last_revision', 0);  -- the last revision handed out

CREATE TRIGGER sessions_revision_on_insert AFTER INSERT ON sessions BEGIN
  UPDATE meta SET value = value + 1 WHERE key = 'last_revision';
  UPDATE sessions SET revision = (SELECT value FROM meta WHERE key = 'last_revision'),
                      created_revision = (SELECT value FROM meta WHERE key = 'last_revision')
    WHERE id = NEW.id;
END;

CREATE TRIGGER sessions_revision_on_change AFTER UPDATE OF n_turns, system_prompt ON sessions
BEGIN
  UPDATE meta SET value = value + 1 WHERE key = 'last_revision';
  UPDATE sessions SET revision = (SELECT value FROM meta WHERE key = 'last_revision')
    WHERE id = NEW.id;
END;
)sql";
}

// Older code inserts kv_sessions rows naming their columns, so the rows it writes leave
// tail_hash NULL: their tails are recomputed, never taken on trust.
std::string_view tail_hash_schema_v3() {
  return R"sql(
ALTER TABLE kv_sessions ADD COLUMN tail_hash INTEGER;  -- chained hash of the tail's tokens
)sql";
}

}  // namespace parley::store

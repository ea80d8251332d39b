// The store's tables, as SQL text. Migration 1 runs it on a new file; later versions change
// the file only through further migrations (migrations.cpp), never by editing this text.
#pragma once

#include <string_view>

namespace parley::store {

// Content: meta, sessions, turns (the transcript, the source of truth).
std::string_view content_schema_v1();
// Aux: kv_sessions, kv_block_refs, prefix_blocks (a cache of the transcript's KV: dropping
// these tables loses nothing that a re-prefill cannot rebuild).
std::string_view kv_schema_v1();
// Version 2: sessions.revision, a change marker of the transcript taken from the store-wide
// counter meta 'last_revision', set by triggers (so every writer, older code too, bumps it).
std::string_view revision_schema_v2();
// Version 3: kv_sessions.tail_hash, the chained hash of the tokens the stored tail block was
// computed for. NULL (rows older code wrote): not known, and the tail is recomputed.
std::string_view tail_hash_schema_v3();

}  // namespace parley::store

// The words parley-chat prints for the library's session states, KV sources and stop reasons.
#pragma once

#include <cstdint>

namespace chat {

// PARLEY_SESSION_*: "active", "idle", "spilled"; "unknown" for other values.
const char* session_state_name(int32_t state);

// PARLEY_KV_SOURCE_*: "new", "resident", "restored", "rebuilt"; "unknown" for other values.
const char* kv_source_name(int32_t source);

// PARLEY_STOP_*: "end token", "max tokens", "stop string", "context end", "stopped",
// "KV budget", "end of the JSON object"; "unknown" for other values.
const char* stop_reason_name(int32_t reason);

}  // namespace chat

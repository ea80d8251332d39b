#include "state_names.h"

#include "parley.h"

namespace chat {

const char* session_state_name(int32_t state) {
  switch (state) {
    case PARLEY_SESSION_ACTIVE: return "active";
    case PARLEY_SESSION_IDLE: return "idle";
    case PARLEY_SESSION_SPILLED: return "spilled";
    default: return "unknown";
  }
}

const char* kv_source_name(int32_t source) {
  switch (source) {
    case PARLEY_KV_SOURCE_NEW: return "new";
    case PARLEY_KV_SOURCE_RESIDENT: return "resident";
    case PARLEY_KV_SOURCE_RESTORED: return "restored";
    case PARLEY_KV_SOURCE_REBUILT: return "rebuilt";
    default: return "unknown";
  }
}

const char* stop_reason_name(int32_t reason) {
  switch (reason) {
    case PARLEY_STOP_END_TOKEN: return "end token";
    case PARLEY_STOP_MAX_TOKENS: return "max tokens";
    case PARLEY_STOP_STRING: return "stop string";
    case PARLEY_STOP_CONTEXT_END: return "context end";
    case PARLEY_STOP_CANCELLED: return "stopped";
    case PARLEY_STOP_OUT_OF_MEMORY: return "KV budget";
    case PARLEY_STOP_FORMAT_END: return "end of the JSON object";
    default: return "unknown";
  }
}

}  // namespace chat

// A tiny synthetic chat model for the C ABI tests, written once per process, and RAII owners
// for the C handles.
#pragma once

#include <string>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"  // greedy_options
#include "support/c_api_sessions.h"  // session_tokens

namespace parley::test {

// A GGUF file (vocab 320, context 256) whose output layer favours plain word pieces, so a
// greedy reply always streams text. Written on first use into a temp dir.
const std::string& tiny_chat_model();

struct EngineHandle {
  parley_engine* e = nullptr;
  EngineHandle() = default;
  explicit EngineHandle(const std::string& model, int32_t kv_type = PARLEY_KV_DEFAULT,
                        uint32_t context_length = 0, uint64_t kv_budget = 0);
  ~EngineHandle() { parley_engine_close(e); }
  EngineHandle(const EngineHandle&) = delete;
  EngineHandle& operator=(const EngineHandle&) = delete;
  operator parley_engine*() const { return e; }
};

struct SessionHandle {
  parley_session* s = nullptr;
  explicit SessionHandle(parley_engine* e, const char* chat_template = "raw");
  ~SessionHandle() { parley_session_close(s); }
  SessionHandle(const SessionHandle&) = delete;
  SessionHandle& operator=(const SessionHandle&) = delete;
  operator parley_session*() const { return s; }
};

// Whether this thread's parley_last_error() contains `needle`.
bool last_error_mentions(const char* needle);
// What parley_last_error() promises: valid UTF-8 with no control characters (one line).
bool is_one_line_of_utf8(const std::string& s);

}  // namespace parley::test

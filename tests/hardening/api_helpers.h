// Small helpers over the C API for the hardening tests and their child processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"  // greedy_options

namespace parley::test {

// CPU engine options; the strings must outlive the struct. store "" = no store.
parley_engine_options engine_options(const std::string& model, const std::string& store,
                                     uint64_t kv_budget = 0, uint32_t idle_spill_ms = 0,
                                     int32_t n_threads = 1);

// The conversation a session holds: every message's text, then the token ids.
struct Transcript {
  std::vector<std::string> texts;
  std::vector<int32_t> tokens;
  bool operator==(const Transcript&) const = default;
};
// PARLEY_OK and the transcript, or the first failing status.
parley_status read_transcript(parley_session* s, Transcript& out);

}  // namespace parley::test

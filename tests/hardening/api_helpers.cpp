#include "api_helpers.h"

namespace parley::test {

parley_engine_options engine_options(const std::string& model, const std::string& store,
                                     uint64_t kv_budget, uint32_t idle_spill_ms,
                                     int32_t n_threads) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.store_path = store.empty() ? nullptr : store.c_str();
  o.device = "cpu";
  o.n_threads = n_threads;
  o.kv_budget_bytes = kv_budget;
  o.idle_spill_ms = idle_spill_ms;
  return o;
}

parley_status read_transcript(parley_session* s, Transcript& out) {
  out = {};
  parley_session_info info;
  info.struct_size = sizeof info;
  if (const parley_status st = parley_session_get_info(s, &info)) return st;
  for (uint32_t i = 0; i < info.n_turns; ++i) {
    parley_turn turn;
    turn.struct_size = sizeof turn;
    if (const parley_status st = parley_session_get_turn(s, i, &turn)) return st;
    out.texts.emplace_back(turn.text);
  }
  size_t n = 0;
  if (const parley_status st = parley_session_get_tokens(s, nullptr, 0, &n)) return st;
  out.tokens.resize(n);
  return parley_session_get_tokens(s, out.tokens.data(), n, &n);
}

}  // namespace parley::test

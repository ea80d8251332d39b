#include "stats_report.h"

#include <cstdio>

#include "output.h"
#include "state_names.h"

namespace chat {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The new prompt tokens are the message and its template markers. The KV figures count the
// whole conversation before the reply: the earlier turns' KV (or a shared prefix's) is reused,
// so the reused tokens are no part of the prompt.
void print_turn(const parley_turn_stats& t) {
  std::printf("last turn: %u new prompt tokens, %u generated; KV of %u tokens reused, %u computed; "
              "TTFT %.1f ms, TPOT %.2f ms (%.1f tok/s)\n",
              t.prompt_tokens, t.generated_tokens, t.reused_tokens, t.computed_tokens, t.ttft_ms,
              t.tpot_ms, t.tpot_ms > 0 ? 1000.0 / t.tpot_ms : 0.0);
  std::printf("last turn KV: %s, restore %.2f ms\n", kv_source_name(t.kv_source), t.restore_ms);
  if (t.stop_reason == PARLEY_STOP_STRING) {
    std::printf("last reply ended at: stop string %d\n", t.stop_index);
  } else {
    std::printf("last reply ended at: %s\n", stop_reason_name(t.stop_reason));
  }
}

void print_kv(const parley_engine_stats& s) {
  std::printf("KV: %llu bytes/token, %.2f MiB resident in %u session(s), budget %.1f MiB\n",
              (unsigned long long)s.kv_bytes_per_token, double(s.kv_bytes_resident) / kMiB,
              s.sessions_active, double(s.kv_budget_bytes) / kMiB);
  std::printf("KV blocks: %llu used, %llu shared, %llu cached of %llu total; "
              "prefix cache: %llu hits, %llu misses\n",
              (unsigned long long)s.kv_blocks_used, (unsigned long long)s.kv_blocks_shared,
              (unsigned long long)s.kv_blocks_cached, (unsigned long long)s.kv_blocks_total,
              (unsigned long long)s.prefix_hits, (unsigned long long)s.prefix_misses);
  std::printf("sessions: %u active, %u idle, %u spilled; store: %llu bytes\n", s.sessions_active,
              s.sessions_idle, s.sessions_spilled, (unsigned long long)s.store_bytes);
}

}  // namespace

void print_stats(parley_engine* engine, const std::optional<parley_turn_stats>& last_turn) {
  if (last_turn) {
    print_turn(*last_turn);
  } else {
    std::printf("no turn yet\n");
  }
  parley_engine_stats es;
  es.struct_size = sizeof es;
  const parley_status st = parley_engine_get_stats(engine, &es);
  if (st == PARLEY_OK) {
    print_kv(es);
  } else {
    print_error("cannot read the engine's figures", st);
  }
}

}  // namespace chat

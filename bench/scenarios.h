// The benchmark scenarios; each writes its own JSON lines through the context.
#pragma once

#include <string_view>
#include <vector>

#include "bench_context.h"

namespace parley::bench {

void run_kv_bytes(BenchContext& ctx);  // scenario_kv_bytes.cpp
void run_prefix(BenchContext& ctx);    // scenario_prefix.cpp
void run_turn(BenchContext& ctx);      // scenario_turn.cpp
void run_prefill(BenchContext& ctx);   // scenario_prefill.cpp
void run_decode(BenchContext& ctx);    // scenario_decode.cpp
void run_codec(BenchContext& ctx);     // scenario_codec.cpp
void run_spill(BenchContext& ctx);     // scenario_spill.cpp
void run_concurrent(BenchContext& ctx);  // scenario_concurrent.cpp
void run_json_format(BenchContext& ctx);  // scenario_json_format.cpp

struct Scenario {
  std::string_view name;
  void (*run)(BenchContext&);
};

// In the order they run by default.
const std::vector<Scenario>& all_scenarios();

// KV types compared by default where the type changes the figures.
inline const std::vector<kv::KvType> kAllKvTypes = {kv::KvType::int8, kv::KvType::f16,
                                                    kv::KvType::f32};
// Where it does not, the engine's default alone.
inline const std::vector<kv::KvType> kDefaultKvType = {kv::KvType::int8};

}  // namespace parley::bench

// The command line of parley-bench.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/block_layout.h"
#include "model/dtype.h"

namespace parley::bench {

struct BenchArgs {
  std::string model_path;                // --model: a GGUF file or a Hugging Face directory
  std::string synthetic;                 // --synthetic: a shape name from synthetic_shapes.h
  std::optional<model::DType> weights;   // --weights (alias --dtype): synthetic only; F16 if unset
  uint64_t seed = 1;                     // --seed: synthetic weights only
  std::string device = "cpu";            // --device: handed to the engine as it is
  std::vector<std::string> scenarios;    // --scenario, canonical names; empty = all
  int32_t threads = 0;                   // --threads; 0 = one per core
  std::vector<kv::KvType> kv_types;      // --kv; empty = each scenario's default
  uint32_t repeat = 3;                   // --repeat: timed runs of prefill and decode
  std::string out_path;                  // --out: JSON lines are appended here too
  uint32_t sessions = 8;                 // --sessions: prefix
  uint32_t system_tokens = 200;          // --system-tokens: prefix
  uint32_t turns = 10;                   // --turns: turn
  uint32_t turn_tokens = 32;             // --turn-tokens: reply length in turn
  std::vector<uint32_t> prompt_tokens = {128, 512, 2048};  // --prompt-tokens: prefill
  std::vector<uint32_t> context_tokens = {128};            // --context: decode
  uint32_t gen_tokens = 64;                                // --tokens (alias --gen-tokens): decode
  std::vector<uint32_t> spill_tokens = {512, 2048};        // --spill-tokens: spill
  std::vector<uint32_t> concurrent_sessions = {1, 2, 4, 8};  // --concurrent: concurrent
  double codec_min_seconds = 0.3;        // --codec-min-s: codec, least time per timing
  uint32_t copy_mib = 512;               // --copy-mib: each array of the bandwidth copy loop
  bool help = false;
  bool version = false;  // --version: the library's version, and nothing run
};

// Throws std::invalid_argument naming the bad flag or value.
BenchArgs parse_args(int argc, char** argv);

const char* usage_text();

// --threads, or one per core when it is 0 (as the CPU backend counts them).
int resolved_threads(const BenchArgs& args);

// The weight type synthetic models are built in.
inline model::DType synthetic_weights(const BenchArgs& args) {
  return args.weights.value_or(model::DType::f16);
}

}  // namespace parley::bench

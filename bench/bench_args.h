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
  std::string model_path;                  // --model: a GGUF file or a Hugging Face directory
  std::string synthetic;                   // --synthetic: a shape name from synthetic_shapes.h
  model::DType dtype = model::DType::f16;  // --dtype: synthetic weights only
  uint64_t seed = 1;                       // --seed: synthetic weights only
  std::vector<std::string> scenarios;      // --scenario; empty = all
  int32_t threads = 0;                     // --threads; 0 = one per core
  std::vector<kv::KvType> kv_types;        // --kv; empty = each scenario's default
  uint32_t repeat = 3;                     // --repeat: timed runs of prefill/decode
  std::string out_path;                    // --out: JSON lines are appended here too
  uint32_t sessions = 8;                   // --sessions: shared-prefix
  uint32_t system_tokens = 200;            // --system-tokens: shared-prefix
  uint32_t turns = 10;                     // --turns: turns
  uint32_t turn_tokens = 32;               // --turn-tokens: reply length in turns
  uint32_t prompt_tokens = 128;            // --prompt-tokens: prefill and decode
  uint32_t gen_tokens = 64;                // --gen-tokens: decode
  bool help = false;
};

// Throws std::invalid_argument naming the bad flag or value.
BenchArgs parse_args(int argc, char** argv);

const char* usage_text();

// --threads, or one per core when it is 0 (as the CPU backend counts them).
int resolved_threads(const BenchArgs& args);

}  // namespace parley::bench

// What every scenario needs: the arguments, the model, the output, engines on demand, and
// the fields that every JSON line carries.
#pragma once

#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "bench_args.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "json_lines.h"
#include "memory_bandwidth.h"
#include "model_source.h"

namespace parley::bench {

// The keys of every line, in order; null where one does not apply to the scenario.
inline constexpr std::string_view kCommonKeys[] = {
    "scenario",        "model",          "backend",        "threads",
    "kv",              "weights",        "prompt_tokens",  "context_tokens",
    "generated_tokens", "prefill_tok_s", "decode_tok_s",   "ttft_ms",
    "tpot_ms_median",  "tpot_ms_p90",    "kv_bytes_per_token", "peak_rss_bytes",
    "bandwidth_gbs",   "decode_bandwidth_utilisation", "simd",
    "read_bandwidth_gbs", "decode_read_utilisation",
};

class BenchContext {
 public:
  BenchContext(const BenchArgs& args, const ModelSource& source, JsonLines& out,
               const CopyBandwidth& copy_bandwidth)
      : args_(args), source_(source), out_(out), copy_bandwidth_(copy_bandwidth) {}

  const BenchArgs& args() const { return args_; }
  const ModelSource& source() const { return source_; }
  // Measured before the model was loaded.
  const CopyBandwidth& copy_bandwidth() const { return copy_bandwidth_; }
  // The copy loop measured again now, in a child process, when the engines run on the CPU
  // (measure_host_bandwidth_again); nullopt on a CUDA device. Call it between measurements,
  // with the engines idle.
  std::optional<CopyBandwidth> copy_bandwidth_now() const;

  // Threads the backend runs on (--threads, or one per core).
  int threads() const;

  // --kv when given, else `fallback`.
  std::vector<kv::KvType> kv_types(const std::vector<kv::KvType>& fallback) const;

  // A fresh engine (empty prefix cache) on --device over a view of the model.
  std::shared_ptr<engine::Engine> make_engine(kv::KvType kv) const;
  // The same, keeping its sessions in the store file at `store_path` ("" = none), with decode
  // steps shared between sessions (the engine's default) or not.
  std::shared_ptr<engine::Engine> make_engine(kv::KvType kv, const std::string& store_path,
                                              bool batch_decode = true) const;

  // A line with every key of kCommonKeys: those that hold for any measurement on this engine
  // are filled, the rest are null for the scenario to fill. (Non-const: Engine::backend()
  // has no const overload.)
  nlohmann::ordered_json line(std::string_view scenario, engine::Engine& engine) const;

  // Writes the line with the peak RSS as it stands now.
  void write(nlohmann::ordered_json& line);

  // A line saying why a scenario did not run on this model (a "skipped" field).
  void write_skipped(std::string_view scenario, engine::Engine& engine, const std::string& why);

 private:
  const BenchArgs& args_;
  const ModelSource& source_;
  JsonLines& out_;
  CopyBandwidth copy_bandwidth_;
};

// Greedy, fixed length: the same work on every run.
engine::GenerateParams fixed_length_params(uint32_t max_tokens);

// A short untimed turn in its own cache scope, so first-call costs (scratch buffers, thread
// start-up, page faults on the weights) do not land on the first measured turn.
void warm_up(const std::shared_ptr<engine::Engine>& engine);

}  // namespace parley::bench

// The model a benchmark runs on. Each engine gets its own LoadedModel, because Engine takes
// ownership of one. A synthetic model is built once and each engine gets views of its bytes
// (comparing KV types costs no second copy of the weights). A model file is loaded anew for
// each engine, as an application would load it: the engine's backend then lets go of the
// weights it copied, so peak RSS counts them once (mapped pages are shared, not re-read).
#pragma once

#include <memory>
#include <string>

#include "bench_args.h"
#include "model/model_loader.h"

namespace parley::bench {

class ModelSource {
 public:
  // --model PATH or --synthetic NAME. Throws parley::Error or std::invalid_argument.
  explicit ModelSource(const BenchArgs& args);

  // "path/to/model.gguf" or "synthetic:tinyllama-1.1b".
  const std::string& label() const { return label_; }
  uint64_t n_params() const { return n_params_; }
  // Seconds spent loading or building the weights (the first load of a file).
  double load_seconds() const { return load_seconds_; }

  // The model for one engine: views into this source's memory for a synthetic model (it must
  // not outlive this source), the file loaded again otherwise.
  std::unique_ptr<model::LoadedModel> view() const;

 private:
  std::unique_ptr<model::LoadedModel> synthetic_;
  std::string model_path_;
  std::string label_;
  uint64_t n_params_ = 0;
  double load_seconds_ = 0;
};

// For --synthetic: throws std::invalid_argument for an unknown shape, or when its weights
// (twice, unless --device is CUDA: the CPU backend copies them) would take more than 90 % of
// MemAvailable (building them would end in swapping or the OOM killer). Nothing for --model.
void require_memory_for_synthetic(const BenchArgs& args);

}  // namespace parley::bench

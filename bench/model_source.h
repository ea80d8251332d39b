// The model a benchmark runs on, loaded (or built) once. Each engine gets its own
// LoadedModel, because Engine takes ownership of one; those are views of the same bytes, so
// comparing KV types costs no second copy of the weights.
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
  const model::LoadedModel& model() const { return *model_; }
  // Seconds spent loading or building the weights.
  double load_seconds() const { return load_seconds_; }

  // A LoadedModel whose tensor views point into this source's memory; it must not outlive
  // this source.
  std::unique_ptr<model::LoadedModel> view() const;

 private:
  std::unique_ptr<model::LoadedModel> model_;
  std::string label_;
  double load_seconds_ = 0;
};

// For --synthetic: throws std::invalid_argument for an unknown shape, or when its weights
// (twice, unless --device is CUDA: the CPU backend copies them) would take more than 90 % of
// MemAvailable (building them would end in swapping or the OOM killer). Nothing for --model.
void require_memory_for_synthetic(const BenchArgs& args);

}  // namespace parley::bench

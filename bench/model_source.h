// The model a benchmark runs on. Each engine gets a LoadedModel of its own, as in an
// application: the first is the one made (built, or loaded from the file) with the source,
// later ones are made anew (a synthetic model rebuilt from its seed, the same bytes). The
// engine's backend lets go of each weight it copies, so that peak RSS counts them once.
#pragma once

#include <memory>
#include <string>

#include "bench_args.h"
#include "model/dtype.h"
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

  // A model for one engine: the first call takes the one made with the source.
  std::unique_ptr<model::LoadedModel> make_model() const;

 private:
  std::unique_ptr<model::LoadedModel> build() const;

  std::string synthetic_;  // the shape's name, or "" for a file
  model::DType synthetic_dtype_ = model::DType::f16;
  uint64_t seed_ = 0;
  std::string model_path_;
  mutable std::unique_ptr<model::LoadedModel> first_;
  std::string label_;
  uint64_t n_params_ = 0;
  double load_seconds_ = 0;
};

// For --synthetic: throws std::invalid_argument for an unknown shape, or when its weights
// would take more than 90 % of MemAvailable (building them would end in swapping or the OOM
// killer). Nothing for --model.
void require_memory_for_synthetic(const BenchArgs& args);

}  // namespace parley::bench

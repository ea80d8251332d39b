// The CPU backend: a layer loop over F32/F16/BF16/Q8_0 weights on a persistent thread pool.
#pragma once

#include <memory>
#include <span>

#include "backend/backend.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace parley::backend::cpu {

class CpuBackend final : public Backend {
 public:
  // The weights (and what their views point into) must outlive the backend. The matrices are
  // copied into the layouts the products read, on huge pages (cpu_matrix.h); where they lie in
  // one of `mapped_files` (the model's read-only file mappings), their file pages are then
  // dropped from the process. n_threads: 0 = one
  // per core. Throws Error(internal) when a weight's shape does not match the config,
  // Error(invalid_argument) for a negative thread count.
  CpuBackend(const model::ModelConfig& config, const model::Weights& weights, int32_t n_threads,
             std::span<const std::span<const std::byte>> mapped_files = {});
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  uint32_t max_batch() const override;
  void forward(const Batch& batch, kv::KvView& kv, std::span<float> logits) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::backend::cpu

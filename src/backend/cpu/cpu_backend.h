// The CPU backend: a layer loop over F32/F16/BF16/Q8_0 weights on a persistent thread pool.
// Several sequences' steps run as one: their rows go through each product together.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace parley::backend::cpu {

class CpuBackend final : public Backend {
 public:
  // The weights (and what their views point into) must outlive the backend. The matrices are
  // copied into the layouts the products read, on huge pages (cpu_matrix.h), and the norms
  // into floats; each view so copied is then given to `release` (backend.h), when there is
  // one. The token embedding of an untied output matrix is read where it lies. `taken`
  // (backend.h) follows the copying a layer at a time. release_frees_buffers: `release`
  // frees the buffers the weights own (model::release_weight_bytes), which makes room for
  // the copies. n_threads: 0 = one per core. Throws Error(internal) when a weight's shape does
  // not match the config, Error(invalid_argument) for a negative thread count,
  // Error(out_of_memory) when the copies would need more memory than the process can get
  // (memory_room.h).
  CpuBackend(const model::ModelConfig& config, const model::Weights& weights, int32_t n_threads,
             const WeightRelease& release = {}, const WeightsTaken& taken = {},
             bool release_frees_buffers = false);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  uint32_t max_batch() const override;
  void forward(const Batch& batch, kv::KvView& kv, std::span<float> logits) override;
  uint32_t max_sequences() const override;
  void forward_many(std::span<const SequenceStep> steps) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::backend::cpu

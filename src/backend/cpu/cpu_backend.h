// The CPU backend: a layer loop over F32/F16/BF16/Q8_0 weights on a persistent thread pool.
#pragma once

#include <memory>
#include <mutex>

#include "backend/backend.h"

namespace parley::backend::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const model::LoadedModel& model, int32_t n_threads);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  uint32_t max_batch() const override;
  void forward(const Batch& batch, kv::KvCache& kv, std::span<float> logits) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::mutex mutex_;  // one forward at a time: the pool and scratch are shared
};

}  // namespace parley::backend::cpu

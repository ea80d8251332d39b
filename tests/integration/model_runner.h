// Runs a loaded model's forward pass directly (below the C ABI) to compare logits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "kv/kv_cache.h"
#include "model/model_loader.h"

namespace parley::test {

class ModelRunner {
 public:
  explicit ModelRunner(const std::string& path, int32_t n_threads = 2);

  const model::ModelConfig& config() const { return model_->config; }

  // Logits of every position: [ids.size(), n_vocab]. The ids are fed in chunks of `chunk`
  // tokens (0 = all at once) into a fresh cache of the given type.
  std::vector<float> logits(const std::vector<int32_t>& ids, kv::KvType kv_type,
                            size_t chunk = 0) const;

 private:
  std::unique_ptr<model::LoadedModel> model_;
  std::unique_ptr<backend::Backend> backend_;
};

struct LogitsComparison {
  double max_abs_diff = 0;
  size_t rows = 0;
  size_t top1_agree = 0;
};

// Whether ids[p] (p > 0) is the greedy choice of `logits` ([ids.size(), n_vocab], as
// ModelRunner::logits gives) at the position before it.
bool is_greedy_choice(const std::vector<float>& logits, size_t n_vocab,
                      const std::vector<int32_t>& ids, size_t p);

// Row-by-row comparison of two [rows, n_vocab] logits arrays.
LogitsComparison compare_logits(const std::vector<float>& a, const std::vector<float>& b,
                                size_t n_vocab);

}  // namespace parley::test

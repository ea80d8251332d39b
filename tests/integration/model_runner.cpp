#include "model_runner.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace parley::test {

ModelRunner::ModelRunner(const std::string& path, int32_t n_threads)
    : model_(model::load_model(path)), backend_(backend::make_backend("cpu", *model_, n_threads)) {}

std::vector<float> ModelRunner::logits(const std::vector<int32_t>& ids, kv::KvType kv_type,
                                       size_t chunk) const {
  const auto& c = model_->config;
  kv::KvCache kv(kv_type, kv::KvShape{c.n_layers, c.n_kv_heads, c.head_dim}, uint32_t(ids.size()));
  const size_t vocab = size_t(c.n_vocab);
  std::vector<float> out(ids.size() * vocab);
  const size_t step = std::min<size_t>(chunk ? chunk : ids.size(), backend_->max_batch());
  for (size_t pos = 0; pos < ids.size(); pos += step) {
    const size_t n = std::min(step, ids.size() - pos);
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(ids).subspan(pos, n);
    batch.start_pos = uint32_t(pos);
    batch.all_logits = true;
    backend_->forward(batch, kv, std::span<float>(out).subspan(pos * vocab, n * vocab));
  }
  return out;
}

bool is_greedy_choice(const std::vector<float>& logits, size_t n_vocab,
                      const std::vector<int32_t>& ids, size_t p) {
  const float* row = logits.data() + (p - 1) * n_vocab;
  return std::max_element(row, row + n_vocab) - row == ids[p];
}

LogitsComparison compare_logits(const std::vector<float>& a, const std::vector<float>& b,
                                size_t n_vocab) {
  LogitsComparison r;
  r.rows = std::min(a.size(), b.size()) / n_vocab;
  for (size_t row = 0; row < r.rows; ++row) {
    const float* x = a.data() + row * n_vocab;
    const float* y = b.data() + row * n_vocab;
    for (size_t i = 0; i < n_vocab; ++i) {
      r.max_abs_diff = std::max(r.max_abs_diff, std::fabs(double(x[i]) - double(y[i])));
    }
    if (std::max_element(x, x + n_vocab) - x == std::max_element(y, y + n_vocab) - y) {
      ++r.top1_agree;
    }
  }
  return r;
}

}  // namespace parley::test

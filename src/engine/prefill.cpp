// Session::prefill — new tokens into the KV cache in chunks, so activation memory stays
// bounded for long inputs; only the last chunk's last row produces logits.
#include <algorithm>
#include <span>

#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

void Session::prefill() {
  auto& backend = engine_->backend();
  logits_.resize(size_t(engine_->config().n_vocab));
  const uint32_t chunk = std::max<uint32_t>(1, backend.max_batch());
  while (n_cached_ < tokens_.size()) {
    const uint32_t n = std::min<uint32_t>(chunk, uint32_t(tokens_.size()) - n_cached_);
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(tokens_).subspan(n_cached_, n);
    batch.start_pos = n_cached_;
    backend.forward(batch, *kv_, logits_);
    n_cached_ += n;
  }
}

}  // namespace parley::engine

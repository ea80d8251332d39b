// Session::prefill — new tokens into the KV cache. Leading blocks that another session (or an
// earlier one) already computed for the same prefix are shared instead; the rest is computed
// in chunks, so activation memory stays bounded for long inputs and a stop request is seen
// between them. Only the last chunk's last row produces logits.
#include <algorithm>
#include <span>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

uint32_t Session::prefill(uint32_t end) {
  // The last token is always computed: its logits start the reply.
  const uint32_t before = n_cached_;
  n_cached_ = blocks_.reuse_published(tokens_, n_cached_, end - 1);
  opening_.reset();  // a prepared opening's blocks, when the turn begins with them, are taken
  const uint32_t from_cache = n_cached_ - before;
  n_cached_ = compute(blocks_, tokens_, n_cached_, end, logits_);
  blocks_.publish_full(tokens_, n_cached_);
  return from_cache;
}

uint32_t Session::compute(kv::BlockTable& table, std::span<const int32_t> tokens, uint32_t from,
                          uint32_t end, std::vector<float>& logits) {
  auto& backend = engine_->backend();
  prepare_write(table, from, end);
  logits.resize(size_t(engine_->config().n_vocab));
  const uint32_t chunk = std::max<uint32_t>(1, backend.max_batch());
  auto view = table.view(engine_->context_length());
  // interrupt() is seen between chunks: a stop during a long prompt does not wait for all of
  // it. What is computed stays; the next turn computes the rest.
  while (from < end && !interrupted()) {
    const uint32_t n = std::min(chunk, end - from);
    backend::Batch batch;
    batch.tokens = tokens.subspan(from, n);
    batch.start_pos = from;
    backend.forward(batch, view, logits);
    from += n;
  }
  return from;
}

void Session::feed_last_token(StepBatcher::Decoder& decoder) {
  const uint32_t pos = n_cached_;
  prepare_write(pos, pos + 1);
  auto view = blocks_.view(engine_->context_length());
  backend::SequenceStep step;
  step.batch.tokens = std::span<const int32_t>(tokens_).subspan(pos, 1);
  step.batch.start_pos = pos;
  step.kv = &view;
  step.logits = logits_;
  decoder.step(step);
  ++n_cached_;
  if (n_cached_ % kv::kBlockTokens == 0) blocks_.publish_full(tokens_, n_cached_);
}

}  // namespace parley::engine

// Session::decode — sample a token, stream its text, feed it back, until a stop.
#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/utf8_stream.h"

namespace parley::engine {

std::string Session::decode(sample::Sampler& sampler, const GenerateParams& params,
                            const TextSink& sink, TurnStats& stats, double started_ms,
                            ReplyCut& cut) {
  const uint32_t context = engine_->context_length();
  const uint32_t limit = params.max_tokens ? params.max_tokens : UINT32_MAX;
  const auto& stops = template_.stop_tokens();
  text::DetokenizeStream stream(engine_->tokenizer(), template_.strip_reply_leading_space());
  // A raw reply to BOS alone starts a text: the stream decodes it as sentencepiece would.
  if (!tokens_.empty() && tokens_.back() == engine_->tokenizer().bos_id()) stream.push(tokens_.back());

  std::string reply;
  uint32_t generated = 0;
  double first_token_ms = 0;
  reply_closed_ = false;
  StepBatcher::Decoder decoder(engine_->step_batcher());
  while (generated < limit && tokens_.size() < context) {
    if (interrupt_.load(std::memory_order_relaxed)) {
      cut = ReplyCut::cancelled;
      break;
    }
    const int32_t id = sampler.sample(logits_, tokens_);
    tokens_.push_back(id);  // its K/V is computed when it is fed back (or by the next turn)
    ++generated;
    const double t = now_ms();
    if (generated == 1) {
      first_token_ms = t;
      stats.ttft_ms = t - started_ms;
    } else {
      stats.tpot_ms = (t - first_token_ms) / (generated - 1);
    }
    if (!params.ignore_eos && std::find(stops.begin(), stops.end(), id) != stops.end()) {
      reply_closed_ = true;
      break;
    }
    const std::string piece = stream.push(id);
    if (!piece.empty()) {
      reply += piece;
      if (sink && !sink(piece)) {
        cut = ReplyCut::cancelled;
        break;
      }
    }
    if (generated == limit || tokens_.size() >= context) break;

    try {
      feed_last_token(decoder);
    } catch (const Error& e) {
      // No KV memory left for the next token, even after spilling idle sessions: the reply
      // ends here, and what was streamed stays the turn (its last token is fed next turn).
      if (e.status() != Status::out_of_memory) throw;
      cut = ReplyCut::out_of_kv_memory;
      break;
    }
  }
  const std::string tail = stream.finish();
  if (!tail.empty()) {
    reply += tail;
    if (sink) sink(tail);  // the reply ends here anyway; a stop request changes nothing
  }
  stats.generated_tokens = generated;
  return reply;
}

}  // namespace parley::engine

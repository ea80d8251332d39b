// Session::decode — sample a token, stream its text, feed it back, until a stop.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/tokenizer.h"
#include "text/utf8_stream.h"

namespace parley::engine {
namespace {

// The reply's text on its way to the sink: streamed up to a stop string, holding back a tail
// that may turn out to start one. The reply keeps its text up to a stop string, or up to what
// the sink saw when it asked to stop (what was held back then was never shown).
class ReplyText {
 public:
  ReplyText(const text::StopStrings& stops, const TextSink& sink) : stops_(stops), sink_(sink) {}

  // Sets what comes before the new text: the reply's earlier text (not streamed again) and a
  // prefix (streamed now). A stop string may begin in them but ends after them: they are
  // never cut. `unfinished` of the reply's earlier tokens are bytes of a character its text
  // does not show: their text is the new text's first. False as add().
  bool begin(std::string_view earlier, std::string_view prefix, size_t unfinished) {
    text_ = std::string(earlier) + std::string(prefix);
    new_from_ = earlier.size();
    streamed_ = kept_ = text_.size();
    unplaced_ = unfinished;
    if (!prefix.empty()) sink_open_ = !sink_ || sink_(prefix);
    return sink_open_;
  }
  // Adds a token's text: `shown`, what the stream handed out with it, of which the token's own
  // text starts at `own_at` (npos: none of it shows yet). False when the sink asked to stop.
  bool add(std::string_view shown, size_t own_at) {
    if (!shown.empty()) place_unplaced();
    if (own_at == std::string::npos) {
      ++unplaced_;
    } else {
      token_starts_.push_back(text_.size() + own_at);
    }
    return append(shown, false);
  }
  // Adds the stream's last bytes and streams whatever is left; false as add().
  bool finish(std::string_view tail) {
    place_unplaced();  // they have the tail's text, or none
    return append(tail, true);
  }

  const std::optional<text::StopStrings::Match>& stop() const { return stop_; }
  // The reply's text so far, its earlier text included.
  size_t size() const { return text_.size(); }
  // Where the reply's kept text ends, when not at the end of its text. After finish().
  std::optional<size_t> cut_at() const {
    std::optional<size_t> at;
    if (stop_) at = stop_->at;
    if (!sink_open_) at = std::min(at.value_or(streamed_), streamed_);
    return at;
  }
  // Tokens (from the unfinished ones on) whose text starts before cut_at(): the ones the
  // reply keeps (none when it began in the earlier text or the prefix).
  size_t tokens_before_cut() const {
    return size_t(std::lower_bound(token_starts_.begin(), token_starts_.end(), *cut_at()) -
                  token_starts_.begin());
  }
  // cut_at() falls inside the last kept token's text: that text, whole, and how many of its
  // bytes come before the cut. Before take().
  struct SplitToken {
    std::string_view shown;
    size_t kept_bytes;
  };
  std::optional<SplitToken> token_split_by_cut() const {
    const size_t kept = tokens_before_cut();
    if (kept == 0) return std::nullopt;
    const size_t at = *cut_at();
    const size_t start = token_starts_[kept - 1];
    const size_t end = kept < token_starts_.size() ? token_starts_[kept] : text_.size();
    if (end <= at) return std::nullopt;
    return SplitToken{std::string_view(text_).substr(start, end - start), at - start};
  }
  // The new text (the prefix, then what was generated), up to cut_at() if any.
  std::string take() {
    if (const auto at = cut_at()) text_.resize(std::max(*at, kept_));
    return text_.substr(new_from_);
  }

 private:
  // Tokens whose text was held back start where the next text handed out does.
  void place_unplaced() {
    token_starts_.resize(token_starts_.size() + unplaced_, text_.size());
    unplaced_ = 0;
  }
  bool append(std::string_view bytes, bool last) {
    text_ += bytes;
    if (stop_) return sink_open_;  // (text after the stop: only an unflushed stream tail)
    const text::StopStrings::Cut cut = stops_.next_cut(text_, streamed_, last);
    stop_ = cut.stop;
    const size_t end = cut.end;
    if (end <= streamed_ || !sink_open_) return sink_open_;
    const std::string_view out = std::string_view(text_).substr(streamed_, end - streamed_);
    streamed_ = end;
    sink_open_ = !sink_ || sink_(out);
    return sink_open_;
  }

  const text::StopStrings& stops_;
  const TextSink& sink_;
  std::string text_;
  size_t new_from_ = 0;  // text_[0, new_from_) is the reply's earlier text
  size_t kept_ = 0;      // text_[0, kept_) is never cut (earlier text and prefix)
  size_t streamed_ = 0;  // text_[0, streamed_) went to the sink
  bool sink_open_ = true;
  // Where each reply token's own text starts in text_ (its first byte's code point), for the
  // tokens placed so far; the unplaced_ after them show nothing yet.
  std::vector<size_t> token_starts_;
  size_t unplaced_ = 0;
  std::optional<text::StopStrings::Match> stop_;
};

}  // namespace

std::string Session::decode(sample::Sampler& sampler, const GenerateParams& params,
                            std::string_view earlier, size_t unfinished_ids, bool reply_has_ids,
                            const TextSink& sink, TurnStats& stats, double started_ms,
                            ReplyCut& cut) {
  const uint32_t context = engine_->context_length();
  const uint32_t limit = params.max_tokens ? params.max_tokens : UINT32_MAX;
  const auto& stops = template_.stop_tokens();
  // A reply with ids before (a prefix, or one that goes on) does not start at the first
  // generated token: its space stays.
  text::DetokenizeStream stream(engine_->tokenizer(),
                                template_.strip_reply_leading_space() && !reply_has_ids);
  // A raw reply to BOS alone starts a text: the stream decodes it as sentencepiece would.
  if (!tokens_.empty() && tokens_.back() == engine_->tokenizer().bos_id()) stream.push(tokens_.back());
  // (They complete no character yet: the stream gives nothing for them.)
  for (size_t i = unfinished_ids; i > 0; --i) stream.push(tokens_[tokens_.size() - i]);

  // A reply that must be one JSON object: at each step, the tokens that keep it one (the end
  // tokens never: the reply ends where the object closes).
  std::optional<text::SchemaPrefix> json;
  std::vector<uint8_t> allowed;
  const JsonVocabulary* json_vocabulary = nullptr;
  if (params.format == ReplyFormat::json) {
    json_vocabulary = &engine_->json_vocabulary();
    std::string so_far(earlier);
    for (size_t i = unfinished_ids; i > 0; --i) {
      so_far += engine_->tokenizer().piece_bytes(tokens_[tokens_.size() - i]);
    }
    json = json_start(params, so_far);
    allowed.resize(size_t(engine_->tokenizer().n_vocab()));
  }
  const auto json_complete = [&] {
    if (!json || !json->complete()) return false;
    stats.stop_reason = StopReason::format_end;
    return true;
  };

  ReplyText reply(params.stop_strings, sink);
  uint32_t generated = 0;
  double first_token_ms = 0;
  reply_closed_ = false;
  StepBatcher::Decoder decoder(engine_->step_batcher());
  if (!reply.begin(earlier, params.reply_prefix, unfinished_ids)) {
    cut = ReplyCut::cancelled;
  }
  while (cut == ReplyCut::none && !json_complete()) {
    if (tokens_.size() >= context) {  // (send() leaves room for one token: not at the start)
      stats.stop_reason = StopReason::context_end;
      break;
    }
    if (interrupted()) {
      cut = ReplyCut::cancelled;
      break;
    }
    if (json) {
      json_vocabulary->allowed(*json, allowed);
      for (const int32_t stop : stops) allowed[size_t(stop)] = 0;
      // Only a vocabulary without byte pieces can lack the one character JSON needs next.
      require(std::find(allowed.begin(), allowed.end(), uint8_t{1}) != allowed.end(),
              Status::unsupported, [&] {
                return "the model's vocabulary has no token that can go on with the reply's JSON "
                       "object after its " + std::to_string(reply.size()) + " bytes (it lacks "
                       "byte pieces to spell what JSON needs there)";
              });
    }
    const int32_t id = sampler.sample(logits_, tokens_, allowed);
    if (json) {
      require(json->feed(json_vocabulary->bytes(id)), Status::internal,
              "a reply token breaks the JSON it was allowed into");
    }
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
      stats.stop_reason = StopReason::end_token;
      break;
    }
    size_t own_at = 0;
    const std::string shown = stream.push(id, &own_at);
    if (!reply.add(shown, own_at)) {
      cut = ReplyCut::cancelled;
      break;
    }
    if (reply.stop() || json_complete()) break;
    if (generated == limit) {
      stats.stop_reason = StopReason::max_tokens;
      break;
    }
    if (tokens_.size() >= context) {
      stats.stop_reason = StopReason::context_end;
      break;
    }

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
  // A stop asked for with the last text (held back until the reply ended) is one too.
  if (!reply.finish(stream.finish()) && cut == ReplyCut::none) cut = ReplyCut::cancelled;
  stats.generated_tokens = generated;
  if (cut == ReplyCut::cancelled) stats.stop_reason = StopReason::cancelled;
  if (cut == ReplyCut::out_of_kv_memory) stats.stop_reason = StopReason::out_of_memory;
  if (reply.stop()) {
    if (cut == ReplyCut::none) stats.stop_reason = StopReason::stop_string;
    stats.stop_index = int32_t(reply.stop()->index);
  }
  if (reply.cut_at()) {
    // The text from the cut on is not the reply's, nor are the tokens that brought only that
    // text (an end token after it included); the reply is left open, so that the next turn
    // closes it as the template does.
    drop_reply_tokens(unfinished_ids + generated - reply.tokens_before_cut());
    if (const auto split = reply.token_split_by_cut()) {
      respell_split_token(split->shown, split->kept_bytes);
    }
    reply_closed_ = false;
  }
  return reply.take();
}

size_t Session::unfinished_character_ids() const {
  // The bytes of the last ids that are pieces of one byte each (up to 3, a character's start
  // at most): the unfinished tail among them is one byte per id.
  std::string bytes;
  for (size_t n = 1; n <= std::min<size_t>(3, tokens_.size()); ++n) {
    const std::string piece = engine_->tokenizer().piece_bytes(tokens_[tokens_.size() - n]);
    if (piece.size() != 1) break;
    bytes.insert(bytes.begin(), piece[0]);
  }
  return text::unfinished_tail_length(bytes);
}

void Session::respell_split_token(std::string_view shown, size_t kept_bytes) {
  const text::Tokenizer& tokenizer = engine_->tokenizer();
  const std::string piece = tokenizer.piece_bytes(tokens_.back());
  // A reply's first word shows without the space its piece has.
  const size_t space = piece.size() == shown.size() + 1 && piece.front() == ' ' ? 1 : 0;
  if (std::string_view(piece).substr(space) != shown) return;
  const std::vector<int32_t> ids = tokenizer.encode_continuation(
      std::string_view(piece).substr(0, space + kept_bytes));
  if (ids.empty() || tokens_.size() - 1 + ids.size() > engine_->context_length()) return;
  tokens_.pop_back();
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  await_last_token_kv();
}

void Session::drop_reply_tokens(size_t n) {
  if (n == 0) return;
  tokens_.resize(tokens_.size() - n);
  await_last_token_kv();
}

void Session::await_last_token_kv() {
  truncate_kv(std::min(n_cached_, uint32_t(tokens_.size()) - 1));
}

}  // namespace parley::engine

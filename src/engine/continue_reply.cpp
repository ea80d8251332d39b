// Session::continue_reply — generating without a new user message: a missing reply (rewound
// to be generated anew) or more of an open one. Also what continuing goes on from, which
// scoring continuations shares.
#include <algorithm>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/tokenizer.h"
#include "text/utf8_stream.h"

namespace parley::engine {

bool Session::continuation_starts_reply() const {
  const bool has_message = !messages_.empty() && messages_.back().role != Role::system;
  require(has_message, Status::invalid_argument,
          "the conversation has no message to reply to: send one first");
  const Message& last = messages_.back();
  require(last.role == Role::user || !last.closed, Status::invalid_argument,
          "the last reply is complete (the model ended it): send a message, or rewind the "
          "reply to have it generated anew");
  return last.role == Role::user || last.n_tokens == 0;
}

std::vector<int32_t> Session::render_continuation(std::string_view text, bool reply_start,
                                                  int32_t after_id, bool whole) const {
  if (text.empty()) return {};
  // Encoded on its own, text in the middle of a reply would gain the space a text's first
  // word has: there it continues the reply's text.
  return reply_start ? template_.render_reply(text, after_id, whole)
                     : template_.render_more_of_reply(text, whole);
}

void Session::continue_reply(const GenerateParams& params, const TextSink& sink,
                             TurnStats& stats) {
  const double started_ms = now_ms();
  // 0. Everything that can refuse is checked before any work, as in send().
  const bool reply_start = continuation_starts_reply();
  require(text::is_valid_utf8(params.reply_prefix), Status::invalid_argument,
          "reply_prefix is not valid UTF-8");
  json_start(params, reply_start ? std::string_view() : messages_.back().text);
  sample::Sampler sampler(params.sampler, seed_for(params), size_t(engine_->config().n_vocab));
  stats = TurnStats{};
  stats.kv_source = kv_held();

  // 1. Nothing new to render but a prefix; the reply needs room for one token more.
  std::vector<int32_t> new_ids;
  const std::vector<int32_t> reply_ids =
      render_continuation(params.reply_prefix, reply_start, tokens_.empty() ? -1 : tokens_.back());
  std::optional<ConversationCopy> before_drop =
      fit_turn(nullptr, new_ids, reply_ids.size() + 1,
               reply_ids.size() + std::max<size_t>(1, params.max_tokens), false, stats);
  // The logits after the last token start the reply: computed again when its KV is there
  // (after a rewind), as they are not kept.
  if (!tokens_.empty() && n_cached_ == tokens_.size()) await_last_token_kv();

  // 2. Where the conversation stood (after a DROP_OLDEST rebuild, the renumbered messages).
  const Checkpoint before = checkpoint();
  const bool missing = messages_.back().role == Role::user;

  // 3. Prefill the pending token (and a prefix); 4. generate; 5a. the reply as it will be.
  ReplyCut cut = ReplyCut::none;
  Message reply_message = missing ? Message{Role::assistant, std::string(), 0,
                                            uint32_t(before.n_tokens), false}
                                  : messages_.back();
  try {
    tokens_.insert(tokens_.end(), reply_ids.begin(), reply_ids.end());
    const uint32_t from_cache = prefill();
    stats.reused_tokens = before.n_cached + from_cache;
    stats.computed_tokens = n_cached_ - stats.reused_tokens;
    if (n_cached_ < tokens_.size()) {  // stopped during the prefill: the prefix alone
      cut = ReplyCut::cancelled;
      stats.stop_reason = StopReason::cancelled;
      reply_message.text += params.reply_prefix;
      reply_closed_ = false;
    } else {
      // A reply cut inside a character ends with the U+FFFD that stands for its first bytes:
      // the bytes that come now finish it (or show it was never one, and the U+FFFD is back).
      std::string& text = reply_message.text;
      const bool goes_on = !missing && params.reply_prefix.empty() &&
                           text.ends_with(text::kReplacementCharacter);
      const size_t unfinished = goes_on ? unfinished_character_ids() : 0;
      if (unfinished > 0) text.resize(text.size() - text::kReplacementCharacter.size());
      // Stop strings may begin in the reply's earlier text; it is never cut.
      const bool reply_has_ids = reply_message.n_tokens > 0 || !reply_ids.empty();
      text += decode(sampler, params, text, unfinished, reply_has_ids, sink, stats, started_ms,
                     cut);
    }
    reply_message.n_tokens = uint32_t(tokens_.size()) - reply_message.token_begin;
    reply_message.closed = reply_closed_;
    messages_.reserve(messages_.size() + 1);
  } catch (...) {
    roll_back(before);
    if (before_drop) put_back(std::move(*before_drop));
    throw;
  }

  // 5b. The reply is the conversation's (also when cut short). Nothing here can fail.
  if (missing) {
    messages_.push_back(std::move(reply_message));
  } else {
    messages_.back() = std::move(reply_message);
    n_committed_ = std::min(n_committed_, messages_.size() - 1);  // its stored turn is stale
  }
  stats.kept = true;
  last_used_ms_ = now_ms();

  // 6. Durable before this returns, as a turn.
  commit_messages();
  fail_if_cut(cut, stats);
}

}  // namespace parley::engine

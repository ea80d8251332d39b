// Session::send and add_exchange — one turn of a conversation, top to bottom.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/utf8_stream.h"

namespace parley::engine {
std::optional<text::SchemaPrefix> Session::json_start(const GenerateParams& params,
                                                     std::string_view earlier) {
  if (params.format != ReplyFormat::json) return std::nullopt;
  const std::string text = std::string(earlier) + params.reply_prefix;
  text::SchemaPrefix state(params.json_schema.get());
  const size_t taken = state.feed_taken(text);
  if (taken == text.size()) return state;
  const std::string what = earlier.empty()       ? "reply_prefix"
                           : params.reply_prefix.empty() ? "the reply so far"
                                                         : "the reply so far with reply_prefix";
  fail(Status::invalid_argument,
       what + " is not the start of a JSON object" +
           (params.json_schema ? " that json_schema accepts" : "") +
           ", which format JSON asks the reply to be: " +
           "its byte " + std::to_string(taken + 1) + " of " + std::to_string(text.size()) +
           " cannot come there");
}

uint64_t Session::seed_for(const GenerateParams& params) {
  if (params.seed) return params.seed;
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

void Session::send(std::string_view user_text, const GenerateParams& params,
                   const TextSink& sink, TurnStats& stats) {
  run_turn(user_text, nullptr, false, params, sink, stats);
}

void Session::add_exchange(std::string_view user_text, std::string_view reply_text,
                           bool reply_ended) {
  TurnStats stats;
  run_turn(user_text, &reply_text, reply_ended, GenerateParams{}, nullptr, stats);
}

std::optional<Session::HeadBeyondContext> Session::head_beyond_context(
    std::string_view text) const {
  // A text whose beginning alone takes more tokens than the context holds is judged from that
  // beginning: text is split into words before it is tokenized, so the ids of the words it
  // ends before are the whole text's first ones (a few more allowed for where the cut falls).
  constexpr size_t kBytesPerToken = 64;  // far more than text has
  constexpr size_t kCutSlack = 8;
  const size_t limit = engine_->context_length() + kCutSlack;
  if (text.size() <= limit * kBytesPerToken) return std::nullopt;
  std::string_view head = text.substr(0, limit * kBytesPerToken);
  const size_t space = head.find_last_of(' ');
  if (space != std::string_view::npos && space > 0) head = head.substr(0, space);
  head = head.substr(0, head.size() - text::unfinished_tail_length(head));
  const size_t head_tokens = engine_->tokenizer().encode(head).size();
  if (head_tokens <= limit) return std::nullopt;
  return HeadBeyondContext{head.size(), head_tokens, head_tokens - kCutSlack};
}

void Session::refuse_text_beyond_context(std::string_view text, std::string_view what) const {
  const auto head = head_beyond_context(text);
  if (!head) return;
  fail(Status::context_full,
       "the " + std::string(what) + " needs more than " + std::to_string(head->more_than) +
           " tokens (its first " + std::to_string(head->bytes) + " of " +
           std::to_string(text.size()) + " bytes take " + std::to_string(head->tokens) +
           "), and the context holds " + std::to_string(engine_->context_length()));
}

std::optional<Session::ConversationCopy> Session::fit_turn(const std::string_view* user_text,
                                                           std::vector<int32_t>& new_ids,
                                                           size_t reply_room, size_t wanted_room,
                                                           bool written, TurnStats& stats) {
  const uint32_t context = engine_->context_length();
  const bool fits = tokens_.size() + new_ids.size() + reply_room <= context;
  // Words for a refusal only.
  const auto reply_needs = [&] {
    return (written ? "" : "at least ") + std::to_string(reply_room);
  };
  if (!fits && overflow_ != OverflowPolicy::drop_oldest) {
    const std::string needs = user_text ? "the message needs " + std::to_string(new_ids.size()) +
                                              " tokens and its reply " + reply_needs()
                                        : "the reply needs " + reply_needs() + " more tokens";
    fail(Status::context_full,
         needs + ", but only " +
             std::to_string(context - std::min<size_t>(context, tokens_.size())) +
             " of the context's " + std::to_string(context) + " are left");
  }
  // A reply that has only the room to start would end at the context's end after a few
  // tokens: older exchanges give way for all it may take, when that is in reach.
  const bool roomy = tokens_.size() + new_ids.size() + wanted_room <= context;
  std::optional<ConversationCopy> before_drop;
  if (overflow_ == OverflowPolicy::drop_oldest && !roomy) {
    before_drop = drop_oldest_to_fit(user_text, new_ids, wanted_room);
  }
  if (!before_drop && !fits) {
    before_drop = drop_oldest_to_fit(user_text, new_ids, reply_room);
    if (!before_drop) {
      const std::string alone =
          user_text ? std::to_string(
                          template_.render_user_turn(system_prompt_, *user_text, true).size()) +
                          " with the conversation's opening, and its reply " + reply_needs()
                    : reply_needs() + " more after its user message and the conversation's opening";
      // A reply written or begun (reply_prefix) may be what is too long.
      const std::string subject = !user_text     ? "the reply does"
                                  : reply_room > 1 ? "the message and its reply do"
                                                   : "the message does";
      fail(Status::context_full,
           subject + " not fit the context's " +
               std::to_string(context) + " tokens even with every earlier exchange dropped (it " +
               "needs " + alone + ")");
    }
  }
  // Only now, once the turn is known to fit: a refused one leaves a spilled session spilled.
  if (before_drop) {
    // The stored KV is of the positions before the drop: the rebuilt conversation's is
    // computed anew (and the next spill replaces what is stored).
    spilled_ = false;
    stats.kv_source = KvSource::rebuilt;
  } else if (spilled()) {  // bring the KV back from the store (or recompute what did not come)
    const double t0 = now_ms();
    stats.kv_source = restore_kv() ? KvSource::restored : KvSource::rebuilt;
    stats.restore_ms = now_ms() - t0;
  }
  return before_drop;
}

void Session::run_turn(std::string_view user_text, const std::string_view* written_reply,
                       bool written_reply_ended, const GenerateParams& params,
                       const TextSink& sink, TurnStats& stats) {
  const double started_ms = now_ms();
  // 0. Everything that can refuse the turn is checked before any work: a refused turn leaves
  //    the session as it was (a spilled one stays spilled).
  require(text::is_valid_utf8(user_text), Status::invalid_argument,
          "user text is not valid UTF-8");
  require(!written_reply || text::is_valid_utf8(*written_reply), Status::invalid_argument,
          "reply text is not valid UTF-8");
  require(text::is_valid_utf8(params.reply_prefix), Status::invalid_argument,
          "reply_prefix is not valid UTF-8");
  if (!written_reply) json_start(params, "");
  refuse_text_beyond_context(user_text, "message");
  // A written reply or a reply_prefix is tokenized whole too.
  refuse_text_beyond_context(written_reply ? *written_reply : params.reply_prefix, "reply");
  std::optional<sample::Sampler> sampler;
  if (!written_reply) {
    sampler.emplace(params.sampler, seed_for(params), size_t(engine_->config().n_vocab));
  }
  stats = TurnStats{};
  stats.kv_source = kv_held();

  // 1. Render only what is new: what closes the previous reply, then the user message (and a
  //    reply's written text or prefix). When it does not fit, the overflow policy decides:
  //    refuse, or drop the oldest exchanges. A reply to generate needs room for one token more.
  std::vector<int32_t> new_ids = render_turn(user_text);
  const std::string_view reply_opening = written_reply ? *written_reply : params.reply_prefix;
  // The reply's written text or prefix, as it follows the last id before it (a raw reply
  // joins the word it follows, or starts one).
  const auto render_reply = [&] {
    const int32_t before_reply = !new_ids.empty() ? new_ids.back()
                                 : !tokens_.empty() ? tokens_.back()
                                                    : -1;
    std::vector<int32_t> ids = reply_opening.empty()
                                   ? std::vector<int32_t>()
                                   : template_.render_reply(reply_opening, before_reply,
                                                            written_reply != nullptr);
    if (written_reply && written_reply_ended) {
      const std::vector<int32_t> end = template_.end_reply(ids);
      ids.insert(ids.end(), end.begin(), end.end());
    }
    return ids;
  };
  std::vector<int32_t> reply_ids = render_reply();
  const size_t reply_room = reply_ids.size() + (written_reply ? 0 : 1);
  const size_t wanted_room =
      written_reply ? reply_room : reply_ids.size() + std::max<size_t>(1, params.max_tokens);
  const bool was_spilled = spilled();
  std::optional<ConversationCopy> before_drop =
      fit_turn(&user_text, new_ids, reply_room, wanted_room, written_reply != nullptr, stats);
  if (before_drop && !reply_ids.empty()) {
    // With every exchange dropped, the turn was rendered anew to open the conversation: the
    // reply follows its last id now, and may take an id more or less than before the drop.
    reply_ids = render_reply();
    const size_t needed =
        tokens_.size() + new_ids.size() + reply_ids.size() + (written_reply ? 0 : 1);
    if (needed > engine_->context_length()) {
      put_back(std::move(*before_drop));
      spilled_ = was_spilled;  // its stored KV is the conversation's again
      fail(Status::context_full,
           "the message and its reply do not fit the context's " +
               std::to_string(engine_->context_length()) +
               " tokens even with every earlier exchange dropped (they need " +
               std::to_string(needed) + ")");
    }
  }
  // A turn that adds no ids (an empty message under "raw", after a rewind) starts the reply
  // from the logits after the last kept token: computed again, as they are not kept.
  if (new_ids.empty() && reply_ids.empty() && !tokens_.empty() && n_cached_ == tokens_.size()) {
    await_last_token_kv();
  }

  // 2. Remember where the conversation stood, so a failure leaves it as it was.
  const Checkpoint before = checkpoint();
  const size_t tokens_before = before.n_tokens;
  const bool first = tokens_before == 0;
  stats.prompt_tokens = uint32_t(new_ids.size());

  // 3. Prefill the pending token of the last reply and the new turn (reusing shared prefix
  //    blocks), with a written reply; 4. or generate the reply; 5a. prepare the turn's
  //    messages. Whatever fails in here, memory running out included, leaves the session as
  //    it was.
  ReplyCut cut = ReplyCut::none;
  std::optional<uint32_t> system_tokens;  // set on the first turn after a system prompt
  Message user_message{}, reply_message{};
  try {
    tokens_.insert(tokens_.end(), new_ids.begin(), new_ids.end());
    tokens_.insert(tokens_.end(), reply_ids.begin(), reply_ids.end());
    const uint32_t from_cache = prefill();
    stats.reused_tokens = before.n_cached + from_cache;
    stats.computed_tokens = n_cached_ - stats.reused_tokens;  // short of the prompt if stopped
    std::string reply;
    if (written_reply) {
      // Left open, as a reply cut at max_tokens: the next turn closes it; or ended, as the model
      // ends one. Its last token awaits its KV again, as a generated reply's does, so the next
      // turn computes the logits after it (an interrupted prefill leaves more to compute then;
      // the exchange stands).
      reply = std::string(*written_reply);
      reply_closed_ = written_reply_ended;
      await_last_token_kv();
    } else if (n_cached_ < tokens_.size()) {
      // Stopped during the prompt: a reply of its prefix alone (not streamed), left open.
      cut = ReplyCut::cancelled;
      stats.stop_reason = StopReason::cancelled;
      reply = params.reply_prefix;
      reply_closed_ = false;
    } else {
      reply = decode(*sampler, params, "", 0, !reply_ids.empty(), sink, stats, started_ms, cut);
    }

    if (first && !messages_.empty() && messages_.front().role == Role::system) {
      system_tokens = system_prefix_tokens(new_ids, system_prompt_);
    }
    // A user message's ids start where the turn did (with the system prompt and the previous
    // reply's closing ids, which are rendered with it): rewinding it removes them all.
    user_message = {Role::user, std::string(user_text),
                    stats.prompt_tokens - system_tokens.value_or(0), uint32_t(tokens_before), true};
    const size_t reply_start = tokens_before + new_ids.size();
    reply_message = {Role::assistant, std::move(reply), uint32_t(tokens_.size() - reply_start),
                     uint32_t(reply_start), reply_closed_};
    messages_.reserve(messages_.size() + 3);
  } catch (...) {
    roll_back(before);
    if (before_drop) put_back(std::move(*before_drop));
    throw;
  }

  // 5b. The turn is part of the conversation now (also when cut short: the partial reply).
  //     Nothing here can fail: the room was reserved above.
  if (system_tokens) messages_.front().n_tokens = *system_tokens;
  // After a rewind to right after a user message, its reply is missing: it is recorded as an
  // empty one (its closing ids are this turn's first), so the roles keep alternating.
  if (!messages_.empty() && messages_.back().role == Role::user) {
    messages_.push_back({Role::assistant, std::string(), 0, uint32_t(tokens_before), false});
  }
  messages_.push_back(std::move(user_message));
  messages_.push_back(std::move(reply_message));
  stats.kept = true;
  last_used_ms_ = now_ms();

  // 6. Durable before send() returns. If the store fails, the turn stays in memory and goes
  //    to the store with the next commit.
  commit_messages();
  fail_if_cut(cut, stats);
}

void Session::fail_if_cut(ReplyCut cut, const TurnStats& stats) {
  if (cut == ReplyCut::cancelled) {
    fail(Status::cancelled, "the reply was stopped; its partial text is kept");
  }
  if (cut == ReplyCut::out_of_kv_memory) {
    fail(Status::out_of_memory,
         "the KV budget ran out after " + std::to_string(stats.generated_tokens) +
             " reply tokens: the reply stops there and is kept as the turn (close other "
             "sessions, suspend them with a store, or raise kv_budget_bytes)");
  }
}

}  // namespace parley::engine

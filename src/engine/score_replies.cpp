// Session::score_replies — how likely the model finds each of several replies to a message (or
// each of several ways for the conversation to go on, as continue_reply would), without
// generating and without changing the conversation. The message is computed once, in
// a table that shares the conversation's full blocks; each reply then runs in a fork of that
// table with logits for every row, and the log-probability of each next token is summed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "sample/sampler.h"
#include "text/tokenizer.h"
#include "text/utf8_stream.h"

namespace parley::engine {
namespace {

// log of the probability softmax(row) gives any of `targets` (each listed once), in double:
// the sum over a reply must not drift with its length.
// A NaN logit weighs nothing, as the sampler takes it (impossible): a token the model cannot
// compute is never chosen, nor is it likely. A row with no finite logit is the model's fault.
double log_probability(std::span<const float> row, std::span<const int32_t> targets) {
  const auto weight_of = [](float x, float top) {
    if (x == top) return 1.0;  // (also a +inf top: inf - inf would be NaN)
    return std::isnan(x) ? 0.0 : std::exp(double(x) - double(top));
  };
  float top = -std::numeric_limits<float>::infinity();
  for (const float x : row) {
    if (x > top) top = x;  // (false for NaN)
  }
  require(top > -std::numeric_limits<float>::infinity(), Status::bad_model,
          sample::kNanLogitsMessage);
  double sum = 0;
  for (const float x : row) sum += weight_of(x, top);
  double chosen = 0;
  for (const int32_t t : targets) chosen += weight_of(row[size_t(t)], top);
  return std::log(chosen) - std::log(sum);
}

}  // namespace

std::vector<Session::ReplyScore> Session::score(
    const std::string_view* user_text, std::span<const std::string_view> replies,
    bool with_end) {
  // 0. Everything that can refuse is checked before any work.
  require(!user_text || text::is_valid_utf8(*user_text), Status::invalid_argument,
          "user text is not valid UTF-8");
  const bool reply_start = user_text || continuation_starts_reply();
  for (size_t i = 0; i < replies.size(); ++i) {
    require(text::is_valid_utf8(replies[i]), Status::invalid_argument,
            [&] { return "reply " + std::to_string(i) + " is not valid UTF-8"; });
  }
  // A generated reply ends at any of the stop tokens (the template's end marker, EOS, the other
  // end ids the model's files name, for raw BOS, which starts the next document), so the end
  // scores them together: the chance that the reply ends there as generation would end it.
  const std::vector<int32_t>& any_end_tokens = template_.stop_tokens();
  std::vector<int32_t> prompt = tokens_;
  const std::vector<int32_t> new_ids = user_text ? render_turn(*user_text)
                                                 : std::vector<int32_t>();
  prompt.insert(prompt.end(), new_ids.begin(), new_ids.end());
  require(!prompt.empty(), Status::invalid_argument,
          "the conversation has no tokens to go on from");
  std::vector<std::vector<int32_t>> reply_ids;
  const uint32_t context = engine_->context_length();
  for (size_t i = 0; i < replies.size(); ++i) {
    auto ids = render_continuation(replies[i], reply_start, prompt.back(),
                                    reply_start || with_end);
    if (with_end) {
      // The end follows the whole reply: what it has already, when this goes on from it.
      std::vector<int32_t> whole;
      if (!reply_start) whole.assign(open_reply_ids().begin(), open_reply_ids().end());
      whole.insert(whole.end(), ids.begin(), ids.end());
      const std::vector<int32_t> ending = template_.end_reply(whole);
      ids.insert(ids.end(), ending.begin(), ending.end());
    }
    if (prompt.size() + ids.size() > context) {
      const std::string reply = "reply " + std::to_string(i) + " (" +
                                std::to_string(ids.size()) +
                                (ids.size() == 1 ? " token)" : " tokens)");
      const std::string what =
          user_text ? "the message (" + std::to_string(new_ids.size()) + " tokens) and " + reply +
                          " do not fit"
                    : reply + " does not fit";
      fail(Status::context_full,
           what + " in the " + std::to_string(context - std::min<size_t>(context, tokens_.size())) +
               " tokens the context has left");
    }
    reply_ids.push_back(std::move(ids));
  }
  if (spilled()) restore_kv();  // the conversation's KV is the start of every reply's
  last_used_ms_ = now_ms();

  // 1. The conversation and the message, but for the message's last token: its logits score
  //    each reply's first token, so it runs with each reply.
  const uint32_t last = uint32_t(prompt.size()) - 1;
  const uint32_t start = std::min(n_cached_, last);
  kv::BlockTable base = fork_blocks(blocks_, start);
  std::vector<float> scratch(size_t(engine_->config().n_vocab));
  uint32_t done = base.reuse_published(prompt, start, last);
  done = compute(base, prompt, done, last, scratch);
  require(done == last, Status::cancelled, "scoring was stopped");

  // 2. Each reply after it, every row's logits kept.
  auto& backend = engine_->backend();
  const size_t n_vocab = size_t(engine_->config().n_vocab);
  // Rows of logits are n_vocab floats each: a bounded number at a time.
  const uint32_t chunk = std::clamp<uint32_t>(backend.max_batch(), 1, 64);
  std::vector<ReplyScore> scores(replies.size());
  std::vector<int32_t> sequence;
  std::vector<float> rows;
  for (size_t r = 0; r < replies.size(); ++r) {
    const auto& ids = reply_ids[r];
    scores[r].n_tokens = uint32_t(ids.size());
    if (ids.empty()) continue;
    sequence.assign(prompt.begin(), prompt.end());
    sequence.insert(sequence.end(), ids.begin(), ids.end());
    kv::BlockTable table = fork_blocks(base, last);
    const uint32_t end = uint32_t(sequence.size()) - 1;  // the reply's last token predicts none
    prepare_write(table, last, end);
    auto view = table.view(context);
    for (uint32_t from = last; from < end;) {
      require(!interrupted(), Status::cancelled, "scoring was stopped");
      const uint32_t n = std::min(chunk, end - from);
      rows.resize(size_t(n) * n_vocab);
      backend::Batch batch;
      batch.tokens = std::span<const int32_t>(sequence).subspan(from, n);
      batch.start_pos = from;
      batch.all_logits = true;
      backend.forward(batch, view, rows);
      for (uint32_t i = 0; i < n; ++i) {
        const auto row = std::span<const float>(rows).subspan(size_t(i) * n_vocab, n_vocab);
        const uint32_t target = from + i + 1;
        const bool any_end = with_end && target == end;
        scores[r].logprob += any_end ? log_probability(row, any_end_tokens)
                                     : log_probability(row, std::span(&sequence[target], 1));
      }
      from += n;
    }
  }
  last_used_ms_ = now_ms();
  return scores;
}

}  // namespace parley::engine

#include "score_command.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "bar_parts.h"
#include "output.h"
#include "parley.h"
#include "replies.h"

namespace chat {
namespace {

// "-1.234", or "-" for a text of no tokens, which has no mean.
std::string per_token(double logprob, uint32_t n_tokens) {
  if (n_tokens == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", logprob / double(n_tokens));
  return buf;
}

// Scores `texts` after `message`, each reply with its end; or, for a NULL message, as ways for
// the last reply to go on, which need not end there. Prints them best first.
void score_and_print(Sessions::Open& open, const char* message,
                     const std::vector<std::string>& texts) {
  std::vector<const char*> replies;
  for (const std::string& text : texts) replies.push_back(text.c_str());
  std::vector<double> logprobs(replies.size());
  std::vector<uint32_t> n_tokens(replies.size());
  clear_stop_request();
  parley_status st = PARLEY_OK;
  {
    const InterruptOnCtrlC stop(open.session.get());
    st = parley_session_score_replies(open.session.get(), message, replies.data(),
                                      replies.size(), message ? PARLEY_SCORE_WITH_END : 0,
                                      logprobs.data(), n_tokens.data());
  }
  if (st != PARLEY_OK) {
    print_error("score failed", st);
    return;
  }
  std::vector<size_t> order(replies.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logprobs[a] > logprobs[b]; });
  std::printf("(log-probability of each %s, best first; per token)\n",
              message ? "reply, its end included" : "way to go on");
  for (const size_t i : order) {
    const char* typed = replies[i] + (replies[i][0] == ' ' ? 1 : 0);  // as it was typed
    std::printf("%10.3f %8s  %s\n", logprobs[i], per_token(logprobs[i], n_tokens[i]).c_str(),
                typed);
  }
}

bool has_empty(const std::vector<std::string>& parts, size_t from) {
  return std::any_of(parts.begin() + std::ptrdiff_t(from), parts.end(),
                     [](const std::string& p) { return p.empty(); });
}

}  // namespace

void score_replies(Sessions::Open& open, std::string_view arg) {
  const std::vector<std::string> parts = split_bars(arg);
  if (parts.size() < 2) {
    std::printf("usage: /score MESSAGE | REPLY | REPLY ...\n");
    return;
  }
  // An empty reply is no answer to weigh (it would score the end alone).
  if (has_empty(parts, 1)) {
    std::printf("usage: /score MESSAGE | REPLY | REPLY ...: a reply may not be empty\n");
    return;
  }
  std::vector<std::string> replies;
  for (size_t i = 1; i < parts.size(); ++i) replies.push_back(next_words(parts[i]));
  score_and_print(open, parts.front().c_str(), replies);
}

void score_next(Sessions::Open& open, std::string_view arg) {
  std::vector<std::string> parts = split_bars(arg);
  if (parts.empty() || (parts.size() == 1 && parts.front().empty())) {
    std::printf("usage: /score-next TEXT | TEXT ...\n");
    return;
  }
  // An empty text would score nothing (0 tokens) and so look likeliest.
  if (has_empty(parts, 0)) {
    std::printf("usage: /score-next TEXT | TEXT ...: a text may not be empty\n");
    return;
  }
  for (std::string& part : parts) part = next_words(part);
  score_and_print(open, nullptr, parts);
}

}  // namespace chat

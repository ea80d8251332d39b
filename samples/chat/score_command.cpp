#include "score_command.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "output.h"
#include "parley.h"

namespace chat {
namespace {

std::string_view trim_blanks(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string> split_bars(std::string_view arg) {
  std::vector<std::string> parts;
  for (;;) {
    const auto bar = arg.find('|');
    parts.emplace_back(trim_blanks(arg.substr(0, bar)));
    if (bar == std::string_view::npos) return parts;
    arg.remove_prefix(bar + 1);
  }
}

}  // namespace

void score_replies(Sessions::Open& open, std::string_view arg) {
  const std::vector<std::string> parts = split_bars(arg);
  if (parts.size() < 2) {
    std::printf("usage: /score MESSAGE | REPLY | REPLY ...\n");
    return;
  }
  const std::string& message = parts.front();
  std::vector<const char*> replies;
  for (size_t i = 1; i < parts.size(); ++i) replies.push_back(parts[i].c_str());
  std::vector<double> logprobs(replies.size());
  std::vector<uint32_t> n_tokens(replies.size());
  clear_stop_request();
  parley_status st = PARLEY_OK;
  {
    const InterruptOnCtrlC stop(open.session.get());
    st = parley_session_score_replies(open.session.get(), message.c_str(), replies.data(),
                                      replies.size(), PARLEY_SCORE_WITH_END, logprobs.data(),
                                      n_tokens.data());
  }
  if (st != PARLEY_OK) {
    print_error("score failed", st);
    return;
  }
  std::vector<size_t> order(replies.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logprobs[a] > logprobs[b]; });
  std::printf("(log-probability of each reply, its end included, best first; per token)\n");
  for (const size_t i : order) {
    std::printf("%10.3f %8.3f  %s\n", logprobs[i], logprobs[i] / double(n_tokens[i]),
                replies[i]);
  }
}

}  // namespace chat

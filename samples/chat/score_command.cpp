#include "score_command.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "bar_parts.h"
#include "output.h"
#include "parley.h"

namespace chat {
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

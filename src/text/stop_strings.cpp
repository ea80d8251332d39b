#include "text/stop_strings.h"

#include <algorithm>
#include <utility>

namespace parley::text {

StopStrings::StopStrings(std::vector<std::string> strings) : strings_(std::move(strings)) {
  for (const auto& s : strings_) longest_ = std::max(longest_, s.size());
}

StopStrings::Cut StopStrings::next_cut(std::string_view text, size_t streamed, bool last) const {
  const std::optional<Match> match = find_ending_after(text, streamed);
  // A stop string may have begun in the streamed text only where that text was given as
  // already there; such a start is held as any other (nothing more is streamed after it).
  const size_t window = longest_ > 0 ? longest_ - 1 : 0;
  const size_t held = held_from(text, streamed - std::min(streamed, window));
  // A stop string found ends the reply unless one that starts earlier may still complete:
  // then, as when all the text comes at once, that one wins if it does.
  if (match && (last || match->at <= held)) return {match->at, match};
  return {last ? text.size() : std::max(held, streamed), std::nullopt};
}

template <class StartOf>
std::optional<StopStrings::Match> StopStrings::earliest(std::string_view text,
                                                        StartOf start_of) const {
  std::optional<Match> first;
  for (size_t i = 0; i < strings_.size(); ++i) {
    const size_t at = text.find(strings_[i], start_of(strings_[i]));
    if (at == std::string_view::npos) continue;
    if (!first || at < first->at ||
        (at == first->at && strings_[i].size() < strings_[first->index].size())) {
      first = Match{at, i};
    }
  }
  return first;
}

std::optional<StopStrings::Match> StopStrings::find(std::string_view text, size_t from) const {
  return earliest(text, [&](const std::string&) { return from; });
}

std::optional<StopStrings::Match> StopStrings::find_ending_after(std::string_view text,
                                                                 size_t end) const {
  // Starting there or later, a match ends at end + 1 at the earliest.
  return earliest(text, [&](const std::string& s) { return end - std::min(end, s.size() - 1); });
}

size_t StopStrings::held_from(std::string_view text, size_t from) const {
  // Only the last (longest stop string - 1) bytes can start an incomplete one.
  const size_t window = longest_ > 0 ? longest_ - 1 : 0;
  for (size_t at = std::max(from, text.size() - std::min(text.size(), window)); at < text.size();
       ++at) {
    const std::string_view tail = text.substr(at);
    for (const auto& s : strings_) {
      if (s.size() > tail.size() && std::string_view(s).starts_with(tail)) return at;
    }
  }
  return text.size();
}

}  // namespace parley::text

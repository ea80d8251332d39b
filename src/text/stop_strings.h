// A reply's stop strings: where the reply ends, and how much of it can be streamed before that
// is known. The reply ends where the first stop string in it begins; text that may be the start
// of one is held back until the next tokens say whether it is. The outcome does not depend on
// how the text arrives (token by token, or at once).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parley::text {

class StopStrings {
 public:
  // Limits on what a caller may ask for (checked by the API, messages there).
  static constexpr size_t kMaxCount = 16;
  static constexpr size_t kMaxBytes = 256;

  StopStrings() = default;
  explicit StopStrings(std::vector<std::string> strings);  // none empty

  bool empty() const { return strings_.empty(); }

  struct Match {
    size_t at;     // byte offset of the stop string in the text
    size_t index;  // which one: the shortest that starts there (the first listed if equal)
  };
  struct Cut {
    size_t end;                  // text[streamed, end) can be streamed now
    std::optional<Match> stop;   // set once the reply's end is known (then end == stop->at)
  };
  // For `text`, of which text[0, streamed) was streamed already: what can be streamed now,
  // and the stop if it is known. A stop string that ends past `streamed` counts also when it
  // begins before: text given as already there (a reply's earlier text) may hold its start.
  // `last`: no more text will come.
  Cut next_cut(std::string_view text, size_t streamed, bool last) const;

  // The first place at or after `from` where a whole stop string lies in `text`.
  std::optional<Match> find(std::string_view text, size_t from) const;
  // The first whole stop string in `text` that ends past `end` (it may begin before).
  std::optional<Match> find_ending_after(std::string_view text, size_t end) const;

  // Where `text`'s held-back tail starts: the first offset at or after `from` from which the
  // rest of the text is the start of a stop string (more text could complete it); text.size()
  // when there is none.
  size_t held_from(std::string_view text, size_t from) const;

 private:
  // The earliest match (the shortest on a tie), each string searched from start_of(string).
  template <class StartOf>
  std::optional<Match> earliest(std::string_view text, StartOf start_of) const;

  std::vector<std::string> strings_;
  size_t longest_ = 0;
};

}  // namespace parley::text

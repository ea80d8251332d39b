// Stop strings: where a reply first shows one, and how much of a growing text can be streamed
// before that is decided. Checked by hand on small cases and against a brute-force reading of
// the definitions on random texts streamed in random pieces.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "text/stop_strings.h"

namespace parley::text {
namespace {

// What a stream of `pieces` delivers before the first stop string, and which one stopped it,
// cut by cut as the decode loop streams a reply.
struct Streamed {
  std::string delivered;
  std::optional<StopStrings::Match> stop;
  size_t most_held = 0;  // the longest tail held back at any point
};

Streamed stream(const StopStrings& stops, const std::vector<std::string>& pieces) {
  Streamed out;
  std::string text;
  size_t streamed = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    text += pieces[i];
    const StopStrings::Cut cut = stops.next_cut(text, streamed, i + 1 == pieces.size());
    CHECK(cut.end >= streamed);
    out.delivered += text.substr(streamed, cut.end - streamed);
    streamed = cut.end;
    out.stop = cut.stop;
    if (out.stop) return out;
    out.most_held = std::max(out.most_held, text.size() - streamed);
  }
  CHECK(streamed == text.size());
  return out;
}

TEST_CASE("find: the earliest whole stop string at or after `from`, the shortest on a tie") {
  const StopStrings stops({"\nUser:", "User", "lo"});
  CHECK(!stops.find("hello", 4));
  auto m = stops.find("hello", 0);
  REQUIRE(m);
  CHECK(m->at == 3);
  CHECK(m->index == 2);
  m = stops.find("Hi\nUser: x", 0);
  REQUIRE(m);
  CHECK(m->at == 2);  // "\nUser:" starts before "User"
  CHECK(m->index == 0);
  const StopStrings tie({"abc", "ab", "a", "a"});
  m = tie.find("xabc", 0);
  REQUIRE(m);
  CHECK(m->at == 1);
  CHECK(m->index == 2);
  CHECK(StopStrings().empty());
  CHECK(!StopStrings().find("anything", 0));
}

TEST_CASE("held_from: the tail that could still grow into a stop string") {
  const StopStrings stops({"\nUser:", "END"});
  CHECK(stops.held_from("Hello", 0) == 5);       // nothing can start here
  CHECK(stops.held_from("Hello\n", 0) == 5);     // "\n" may become "\nUser:"
  CHECK(stops.held_from("Hello\nUse", 0) == 5);
  CHECK(stops.held_from("Hello\nUsa", 0) == 9);  // no longer
  CHECK(stops.held_from("Hello E", 0) == 6);
  CHECK(stops.held_from("Hello EN", 6) == 6);
  CHECK(stops.held_from("Hello EN", 7) == 8);    // never before `from`
  CHECK(stops.held_from("", 0) == 0);
  CHECK(StopStrings().held_from("abc", 1) == 3);
}

TEST_CASE("held_from does not hold a whole stop string (find reports it)") {
  const StopStrings stops({"ab"});
  CHECK(stops.held_from("xab", 0) == 3);
  CHECK(stops.find("xab", 0)->at == 1);
}

TEST_CASE("a stop string found waits for one that starts earlier and may still complete") {
  const StopStrings stops({"abcd", "bc"});
  auto cut = stops.next_cut("abc", 0, false);
  CHECK(!cut.stop);  // "bc" is whole, but "abcd" may follow from 0
  CHECK(cut.end == 0);
  cut = stops.next_cut("abcd", 0, false);
  REQUIRE(cut.stop);
  CHECK(cut.stop->index == 0);
  CHECK(cut.end == 0);
  cut = stops.next_cut("abcx", 0, false);
  REQUIRE(cut.stop);
  CHECK(cut.stop->index == 1);
  CHECK(cut.end == 1);
  cut = stops.next_cut("abc", 0, true);  // no more text: "bc" it is
  REQUIRE(cut.stop);
  CHECK(cut.end == 1);
}

TEST_CASE("text given as already streamed: a stop string may begin in it, never lie in it") {
  const StopStrings stops({"\nPlayer:", "ab"});
  // The earlier text ends with a stop string's start; the new text completes it.
  auto cut = stops.next_cut("Hi.\nPla", 7, false);
  CHECK(!cut.stop);
  CHECK(cut.end == 7);  // nothing more until it is known
  cut = stops.next_cut("Hi.\nPlay", 7, false);
  CHECK(!cut.stop);
  CHECK(cut.end == 7);  // "y" is held: "\nPlay" may still become the stop string
  cut = stops.next_cut("Hi.\nPlayer: go", 7, false);
  REQUIRE(cut.stop);
  CHECK(cut.stop->at == 3);
  CHECK(cut.stop->index == 0);
  cut = stops.next_cut("Hi.\nPlan", 7, false);  // not the stop string after all
  CHECK(!cut.stop);
  CHECK(cut.end == 8);
  // A stop string wholly inside the earlier text (given before this stop was asked for) is
  // not this reply's end; one that ends past it is.
  cut = stops.next_cut("xab yy", 4, false);
  CHECK(!cut.stop);
  CHECK(cut.end == 6);
  cut = stops.next_cut("xa", 2, false);
  CHECK(cut.end == 2);  // "a" could begin "ab": held, though already streamed
  cut = stops.next_cut("xab", 2, false);
  REQUIRE(cut.stop);
  CHECK(cut.stop->at == 1);
  CHECK(stops.find_ending_after("xab yab", 3)->at == 5);
  CHECK(stops.find_ending_after("xab yab", 2)->at == 1);
  CHECK(!stops.find_ending_after("xab y", 3));
}

TEST_CASE("streamed in random pieces: the text before the first stop string, nothing else") {
  std::mt19937 rng(20261201);
  const std::string alphabet = "ab\n:";  // few letters, so that stop strings occur often
  auto random_text = [&](size_t max_len) {
    std::string s(std::uniform_int_distribution<size_t>(0, max_len)(rng), 'a');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> strings;
    const size_t n = 1 + rng() % 3;
    size_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      std::string s = random_text(5);
      if (s.empty()) s = "a";
      longest = std::max(longest, s.size());
      strings.push_back(s);
    }
    const StopStrings stops(strings);
    const std::string text = random_text(40);
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      const size_t len = std::min(text.size() - at, size_t(rng() % 4));
      pieces.push_back(text.substr(at, len));
      at += len;
    }
    // The definition, brute force over the whole text: the earliest offset where any string
    // occurs, and the shortest of those that occur there (the first listed if equal).
    size_t first = std::string::npos, which = 0;
    for (size_t at = 0; at < text.size() && first == std::string::npos; ++at) {
      for (size_t i = 0; i < strings.size(); ++i) {
        if (text.compare(at, strings[i].size(), strings[i]) != 0) continue;
        if (first == std::string::npos || strings[i].size() < strings[which].size()) {
          first = at;
          which = i;
        }
      }
    }
    const Streamed got = stream(stops, pieces);
    CAPTURE(text);
    std::string listed;
    for (const auto& str : strings) listed += "[" + str + "]";
    CAPTURE(listed);
    if (first == std::string::npos) {
      CHECK(!got.stop);
      CHECK(got.delivered == text);
    } else {
      REQUIRE(got.stop);
      CHECK(got.stop->at == first);
      CHECK(got.stop->index == which);
      CHECK(got.delivered == text.substr(0, first));
    }
    CHECK(got.most_held < longest);  // never more than a stop string's start is held
  }
}

}  // namespace
}  // namespace parley::text

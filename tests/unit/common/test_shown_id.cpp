// shown_id: an application's id in a message is one bounded, readable line of valid UTF-8.
#include <doctest/doctest.h>

#include <string>

#include "common/shown_id.h"

namespace parley::test {

TEST_CASE("shown_id quotes a printable id as it is, UTF-8 included") {
  CHECK(shown_id("chat-7") == "'chat-7'");
  CHECK(shown_id("") == "''");
  CHECK(shown_id("caf\xC3\xA9 \xE2\x9C\x93") == "'caf\xC3\xA9 \xE2\x9C\x93'");
  CHECK(shown_id("\xF0\x9F\x98\x80") == "'\xF0\x9F\x98\x80'");
}

TEST_CASE("shown_id escapes invalid UTF-8, control characters, quotes and backslashes") {
  CHECK(shown_id("bad\xFF\xFE") == "'bad\\xFF\\xFE'");
  CHECK(shown_id("x\xC3") == "'x\\xC3'");                  // cut short
  CHECK(shown_id("\xC0\xAF") == "'\\xC0\\xAF'");           // overlong
  CHECK(shown_id("\xED\xA0\x80") == "'\\xED\\xA0\\x80'");  // a surrogate
  CHECK(shown_id("a\nb\tc\x7F") == "'a\\x0Ab\\x09c\\x7F'");
  CHECK(shown_id("c1 \xC2\x85") == "'c1 \\xC2\\x85'");  // NEL, a C1 control
  // U+2028 and U+2029 break lines too
  CHECK(shown_id("a\xE2\x80\xA8" "b\xE2\x80\xA9") == "'a\\xE2\\x80\\xA8b\\xE2\\x80\\xA9'");
  CHECK(one_line_text("x\xE2\x80\xA8y") == "x\\xE2\\x80\\xA8y");
  CHECK(shown_id("it's a\\b") == "'it\\'s a\\\\b'");
}

TEST_CASE("shown_id cuts a long id after kShownIdChars characters") {
  const std::string shown = shown_id(std::string(10000, 'z'));
  CHECK(shown == "'" + std::string(kShownIdChars, 'z') + "...'");
  CHECK(shown_id(std::string(kShownIdChars, 'y')) == "'" + std::string(kShownIdChars, 'y') + "'");
  // Characters, not bytes: a multi-byte character is never split.
  std::string accents;
  for (size_t i = 0; i < kShownIdChars + 1; ++i) accents += "\xC3\xA9";
  const std::string cut = shown_id(accents);
  CHECK(cut.size() == 2 + 2 * kShownIdChars + 3);
  CHECK(cut.substr(cut.size() - 4) == "...'");
}

}  // namespace parley::test

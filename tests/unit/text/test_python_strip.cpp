// strip_python_space against Python's str.strip(), lstrip() and rstrip(): the expected texts
// are what Python 3 gives for the same input.
#include <doctest/doctest.h>

#include <string>

#include "text/python_strip.h"

namespace parley::text {
namespace {

// Every character for which Python's str.isspace() is true, in UTF-8.
const char* const kPythonSpaces[] = {
    "\t",       "\n",       "\v",       "\f",       "\r",       "\x1C",     "\x1D",
    "\x1E",     "\x1F",     " ",        "\u0085",   "\u00A0",   "\u1680",   "\u2000",
    "\u2001",   "\u2002",   "\u2003",   "\u2004",   "\u2005",   "\u2006",   "\u2007",
    "\u2008",   "\u2009",   "\u200A",   "\u2028",   "\u2029",   "\u202F",   "\u205F",
    "\u3000"};

TEST_CASE("Python's whitespace is stripped from either end, as its str methods strip it") {
  const std::string text = " \u3000a b\u00A0\n";
  CHECK(strip_python_space(text, true, true) == "a b");
  CHECK(strip_python_space(text, true, false) == "a b\u00A0\n");
  CHECK(strip_python_space(text, false, true) == " \u3000a b");
  CHECK(strip_python_space(text, false, false) == text);
  for (const char* space : kPythonSpaces) {
    CAPTURE(space);
    const std::string around = std::string(space) + "x" + space;
    CHECK(strip_python_space(around, true, true) == "x");
    CHECK(strip_python_space(std::string(space) + space, true, false).empty());
    CHECK(strip_python_space(std::string(space) + space, false, true).empty());
  }
  CHECK(strip_python_space("", true, true).empty());
}

TEST_CASE("characters Python does not count as whitespace stay") {
  // U+200B ZERO WIDTH SPACE, U+180E, U+FEFF, U+2060, NUL and DEL are not str.isspace().
  for (const char* other : {"\u200B", "\u180E", "\uFEFF", "\u2060", "\x7F"}) {
    CAPTURE(other);
    const std::string around = std::string(other) + "x" + other;
    CHECK(strip_python_space(around, true, true) == around);
  }
  const std::string nul("\0x\0", 3);
  CHECK(strip_python_space(nul, true, true) == nul);
  // Bytes that are not UTF-8 are text, as they cannot be whitespace.
  CHECK(strip_python_space(" \xC2 ", true, true) == "\xC2");
}

}  // namespace
}  // namespace parley::text

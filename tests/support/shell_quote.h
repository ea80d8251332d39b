// A string as one word of a POSIX shell command line.
#pragma once

#include <string>

namespace parley::test {

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace parley::test

// How an id the application chose (a session's) appears in error messages and log lines: it
// may be any bytes, and a message must stay one readable, bounded line of valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parley {

// Characters of an id a message shows before it is cut with "...".
inline constexpr size_t kShownIdChars = 64;

// The id in single quotes: invalid UTF-8 bytes and control characters (C0, DEL, C1) as \xNN,
// a backslash or quote escaped with a backslash, cut after kShownIdChars characters.
std::string shown_id(std::string_view id);

// Any text as a message may show it: invalid UTF-8 bytes and control characters as \xNN, the
// rest as it is (not quoted, not cut). A message built from a caller's strings (a path, a
// template name) or from a parser's report of the bytes it read stays one line of UTF-8.
std::string one_line_text(std::string_view text);

}  // namespace parley

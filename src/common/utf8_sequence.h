// The one reading of UTF-8 byte sequences that every check and decoder here shares.
#pragma once

#include <cstddef>
#include <string_view>

namespace parley {

// What starts at the front of some bytes.
struct Utf8Sequence {
  enum Kind {
    whole,       // a valid code point of `length` bytes
    invalid,     // `length` bytes that can never start a valid sequence: one U+FFFD
    incomplete,  // all the bytes (fewer than 4) are a valid start; more may complete them
  } kind;
  size_t length;
};

// Follows the Unicode table of well-formed byte sequences (and the WHATWG decoder): the second
// byte's range depends on the first, which rules out overlongs (E0 80..9F, F0 80..8F),
// surrogates (ED A0..BF) and code points past U+10FFFF (F4 90..BF, F5..FF). An invalid
// sequence is cut at its maximal subpart: the longest prefix that could have been valid.
// `s` is not empty.
Utf8Sequence next_utf8_sequence(std::string_view s);

// Whether all of `s` is whole sequences (also when empty).
bool is_valid_utf8(std::string_view s);

// Whether a whole sequence is a control character: C0, DEL, or C1 (U+0080..U+009F).
bool is_control_character(std::string_view sequence);

}  // namespace parley

// The one reading of UTF-8 byte sequences that every check and decoder here shares.
#pragma once

#include <cstddef>
#include <cstdint>
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

// What a sequence's first byte says of the rest: how many continuation bytes follow, and the
// range of the first of them (the others are 80..BF). `valid` false: no sequence starts with it
// (a continuation byte, C0, C1, F5..FF). ASCII: valid, no continuation bytes.
struct Utf8Lead {
  bool valid;
  uint8_t trailing;
  uint8_t low;
  uint8_t high;
};
constexpr Utf8Lead utf8_lead(uint8_t lead) {
  if (lead < 0x80) return {true, 0, 0x80, 0xBF};
  if (lead >= 0xC2 && lead <= 0xDF) return {true, 1, 0x80, 0xBF};
  if (lead >= 0xE0 && lead <= 0xEF) {
    return {true, 2, uint8_t(lead == 0xE0 ? 0xA0 : 0x80), uint8_t(lead == 0xED ? 0x9F : 0xBF)};
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    return {true, 3, uint8_t(lead == 0xF0 ? 0x90 : 0x80), uint8_t(lead == 0xF4 ? 0x8F : 0xBF)};
  }
  return {false, 0, 0, 0};
}

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

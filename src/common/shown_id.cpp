#include "common/shown_id.h"

#include <cstdint>

namespace parley {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid UTF-8 character at `at`, or 0 when the byte there does not start
// one (a stray continuation, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8_length_at(std::string_view s, size_t at) {
  const auto c = static_cast<unsigned char>(s[at]);
  if (c < 0x80) return 1;
  const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || at + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if (!is_continuation(static_cast<unsigned char>(s[at + i]))) return 0;
  }
  const auto second = static_cast<unsigned char>(s[at + 1]);
  if (c == 0xE0 && second < 0xA0) return 0;   // overlong
  if (c == 0xED && second >= 0xA0) return 0;  // a surrogate
  if (c == 0xF0 && second < 0x90) return 0;   // overlong
  if (c == 0xF4 && second >= 0x90) return 0;  // past U+10FFFF
  return n;
}

// C0, DEL, and C1 (U+0080..U+009F, C2 80..C2 9F in UTF-8).
bool is_control(std::string_view character) {
  const auto c = static_cast<unsigned char>(character[0]);
  if (character.size() == 1) return c < 0x20 || c == 0x7F;
  return c == 0xC2 && static_cast<unsigned char>(character[1]) < 0xA0;
}

void append_escaped_bytes(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char b : bytes) {
    const auto u = static_cast<unsigned char>(b);
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 0xF];
  }
}

}  // namespace

std::string shown_id(std::string_view id) {
  std::string out = "'";
  size_t shown = 0;
  size_t at = 0;
  for (; at < id.size() && shown < kShownIdChars; ++shown) {
    const size_t n = utf8_length_at(id, at);
    const std::string_view character = id.substr(at, n == 0 ? 1 : n);
    if (n == 0 || is_control(character)) {
      append_escaped_bytes(out, character);
    } else {
      if (character == "\\" || character == "'") out += '\\';
      out += character;
    }
    at += character.size();
  }
  if (at < id.size()) out += "...";
  return out + "'";
}

}  // namespace parley

#include "common/shown_id.h"

#include <cstdint>

#include "common/utf8_sequence.h"

namespace parley {
namespace {

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
    const Utf8Sequence seq = next_utf8_sequence(id.substr(at));
    const std::string_view character = id.substr(at, seq.length);
    if (seq.kind != Utf8Sequence::whole || is_control(character)) {
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

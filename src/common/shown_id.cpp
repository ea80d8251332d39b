#include "common/shown_id.h"

#include <cstdint>

#include "common/utf8_sequence.h"

namespace parley {
namespace {

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
    if (seq.kind != Utf8Sequence::whole || is_control_character(character)) {
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

std::string one_line_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const Utf8Sequence seq = next_utf8_sequence(text.substr(at));
    const std::string_view character = text.substr(at, seq.length);
    if (seq.kind != Utf8Sequence::whole || is_control_character(character)) {
      append_escaped_bytes(out, character);
    } else {
      out += character;
    }
    at += character.size();
  }
  return out;
}

}  // namespace parley

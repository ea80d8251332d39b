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

// U+2028 and U+2029 end a line wherever Unicode's line breaking is followed (JSON readers,
// log viewers, Python's splitlines), though they are not control characters.
bool is_line_separator(std::string_view character) {
  return character == "\xE2\x80\xA8" || character == "\xE2\x80\xA9";
}

// Appends the character that starts `text` as a message shows it (invalid bytes, control
// characters and line separators as \xNN; with `in_quotes`, a backslash or quote escaped);
// returns its bytes.
size_t append_shown_character(std::string& out, std::string_view text, bool in_quotes) {
  const Utf8Sequence seq = next_utf8_sequence(text);
  const std::string_view character = text.substr(0, seq.length);
  if (seq.kind != Utf8Sequence::whole || is_control_character(character) ||
      is_line_separator(character)) {
    append_escaped_bytes(out, character);
  } else {
    if (in_quotes && (character == "\\" || character == "'")) out += '\\';
    out += character;
  }
  return character.size();
}

}  // namespace

std::string shown_id(std::string_view id) {
  std::string out = "'";
  size_t at = 0;
  for (size_t shown = 0; at < id.size() && shown < kShownIdChars; ++shown) {
    at += append_shown_character(out, id.substr(at), true);
  }
  if (at < id.size()) out += "...";
  return out + "'";
}

std::string one_line_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) at += append_shown_character(out, text.substr(at), false);
  return out;
}

}  // namespace parley

#include "text/python_strip.h"

#include <algorithm>
#include <array>

#include "common/utf8_sequence.h"

namespace parley::text {
namespace {

// The encodings of the whitespace characters above U+007F.
constexpr std::array<std::string_view, 19> kWideSpaces = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
    "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
    "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
    "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};

bool is_space(std::string_view sequence) {
  if (sequence.size() == 1) {
    const unsigned char c = static_cast<unsigned char>(sequence[0]);
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F);
  }
  for (std::string_view wide : kWideSpaces) {
    if (sequence == wide) return true;
  }
  return false;
}

}  // namespace

std::string_view strip_python_space(std::string_view text, bool leading, bool trailing) {
  size_t begin = 0, end = 0;  // [begin, end): from the first to past the last non-space
  bool seen_text = false;
  for (size_t at = 0; at < text.size();) {
    const Utf8Sequence s = next_utf8_sequence(text.substr(at));
    const size_t length = s.kind == Utf8Sequence::whole ? s.length : std::max<size_t>(s.length, 1);
    if (s.kind != Utf8Sequence::whole || !is_space(text.substr(at, length))) {
      if (!seen_text) begin = at;
      seen_text = true;
      end = at + length;
    }
    at += length;
  }
  if (!seen_text) return leading || trailing ? std::string_view() : text;
  return text.substr(leading ? begin : 0, (trailing ? end : text.size()) - (leading ? begin : 0));
}

}  // namespace parley::text

#include "common/utf8_sequence.h"

#include <cstdint>

namespace parley {

Utf8Sequence next_utf8_sequence(std::string_view s) {
  const Utf8Lead lead = utf8_lead(uint8_t(s[0]));
  if (!lead.valid) return {Utf8Sequence::invalid, 1};
  const size_t trailing = lead.trailing;
  uint8_t low = lead.low;
  uint8_t high = lead.high;
  for (size_t i = 1; i <= trailing; ++i) {
    if (i == s.size()) return {Utf8Sequence::incomplete, i};
    const auto b = uint8_t(s[i]);
    if (b < low || b > high) return {Utf8Sequence::invalid, i};
    low = 0x80;
    high = 0xBF;
  }
  return {Utf8Sequence::whole, trailing + 1};
}

bool is_control_character(std::string_view sequence) {
  const auto lead = uint8_t(sequence[0]);
  if (sequence.size() == 1) return lead < 0x20 || lead == 0x7F;
  return lead == 0xC2 && uint8_t(sequence[1]) < 0xA0;  // C1 is C2 80..C2 9F
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    const Utf8Sequence seq = next_utf8_sequence(s);
    if (seq.kind != Utf8Sequence::whole) return false;
    s.remove_prefix(seq.length);
  }
  return true;
}

}  // namespace parley

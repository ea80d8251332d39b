#include "text/json_prefix.h"

#include "common/utf8_sequence.h"

namespace parley::text {
namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
// JSON's whitespace but '\r', which is never taken (see JsonPrefix).
bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n'; }

int hex_value(uint8_t c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool JsonPrefix::feed(uint8_t c) {
  if (!is_space(c)) {
    space_run_ = 0;
    space_break_ = false;
  }
  switch (mode_) {
    case Mode::start:
      if (feed_space(c)) return true;
      return c == '{' && open(false);
    case Mode::key_or_close:
      if (c == '}') return close(false);
      [[fallthrough]];
    case Mode::key:
      if (feed_space(c)) return true;
      if (c != '"') return false;
      key_ = true;
      mode_ = Mode::string;
      return true;
    case Mode::colon:
      if (feed_space(c)) return true;
      if (c != ':') return false;
      mode_ = Mode::value;
      return true;
    case Mode::value_or_close:
      if (c == ']') return close(true);
      [[fallthrough]];
    case Mode::value:
      if (feed_space(c)) return true;
      return start_value(c);
    case Mode::after_value:
      if (feed_space(c)) return true;
      if (c == '}' || c == ']') return close(c == ']');
      if (c != ',') return false;
      mode_ = (arrays_ >> (depth_ - 1)) & 1 ? Mode::value : Mode::key;
      return true;
    case Mode::string:
      return feed_string(c);
    case Mode::escape:
      if (c == 'u') {
        start_hex(false);
        return true;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' &&
          c != 't') {
        return false;
      }
      mode_ = Mode::string;
      return true;
    case Mode::hex:
      return feed_hex(c);
    case Mode::low_backslash:
      if (c != '\\') return false;
      mode_ = Mode::low_u;
      return true;
    case Mode::low_u:
      if (c != 'u') return false;
      start_hex(true);
      return true;
    case Mode::utf8:
      return feed_utf8(c);
    case Mode::literal: {
      const std::string_view word = kLiterals[literal_];
      if (c != static_cast<uint8_t>(word[literal_at_])) return false;
      if (++literal_at_ == word.size()) mode_ = Mode::after_value;
      return true;
    }
    case Mode::minus:
      if (!is_digit(c)) return false;
      mode_ = c == '0' ? Mode::zero : Mode::integer;
      return true;
    case Mode::zero:
      if (c == '.') mode_ = Mode::point;
      else if (c == 'e' || c == 'E') mode_ = Mode::exponent;
      else return end_number(c);
      return true;
    case Mode::integer:
      if (is_digit(c)) return true;
      if (c == '.') mode_ = Mode::point;
      else if (c == 'e' || c == 'E') mode_ = Mode::exponent;
      else return end_number(c);
      return true;
    case Mode::point:
      if (!is_digit(c)) return false;
      mode_ = Mode::fraction;
      return true;
    case Mode::fraction:
      if (is_digit(c)) return true;
      if (c == 'e' || c == 'E') {
        mode_ = Mode::exponent;
        return true;
      }
      return end_number(c);
    case Mode::exponent:
      if (c == '+' || c == '-') {
        mode_ = Mode::exponent_sign;
        return true;
      }
      [[fallthrough]];
    case Mode::exponent_sign:
      if (!is_digit(c)) return false;
      mode_ = Mode::exponent_digits;
      return true;
    case Mode::exponent_digits:
      if (is_digit(c)) return true;
      return end_number(c);
    case Mode::done:
      return false;
  }
  return false;
}

JsonPrefix::Expect JsonPrefix::expect() const {
  switch (mode_) {
    case Mode::start: return Expect::object;
    case Mode::key_or_close: return Expect::key_or_close;
    case Mode::key: return Expect::key;
    case Mode::colon: return Expect::colon;
    case Mode::value_or_close: return Expect::value_or_close;
    case Mode::value: return Expect::value;
    case Mode::after_value: return Expect::after_value;
    case Mode::zero:
    case Mode::integer:
    case Mode::fraction:
    case Mode::exponent_digits:
      return Expect::number;
    case Mode::done: return Expect::done;
    default: return Expect::token;
  }
}

size_t JsonPrefix::feed_taken(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!feed(static_cast<uint8_t>(bytes[i]))) return i;
  }
  return bytes.size();
}

void JsonPrefix::start_hex(bool low_surrogate) {
  mode_ = Mode::hex;
  hex_left_ = 4;
  code_ = 0;
  low_surrogate_ = low_surrogate;
}

bool JsonPrefix::feed_space(uint8_t c) {
  if (!is_space(c)) return false;
  if (c == '\n') {
    if (space_break_) return false;
    space_break_ = true;
  }
  return ++space_run_ <= kMaxSpaceRun;
}

bool JsonPrefix::open(bool array) {
  if (depth_ == kMaxDepth) return false;
  if (array) {
    arrays_ |= uint64_t{1} << depth_;
  } else {
    arrays_ &= ~(uint64_t{1} << depth_);
  }
  ++depth_;
  mode_ = array ? Mode::value_or_close : Mode::key_or_close;
  return true;
}

bool JsonPrefix::close(bool array) {
  if (depth_ == 0 || bool((arrays_ >> (depth_ - 1)) & 1) != array) return false;
  --depth_;
  mode_ = depth_ == 0 ? Mode::done : Mode::after_value;
  return true;
}

bool JsonPrefix::start_value(uint8_t c) {
  switch (c) {
    case '{':
      return open(false);
    case '[':
      return open(true);
    case '"':
      key_ = false;
      mode_ = Mode::string;
      return true;
    case '-':
      mode_ = Mode::minus;
      return true;
    case '0':
      mode_ = Mode::zero;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
      literal_at_ = 1;
      mode_ = Mode::literal;
      return true;
    default:
      if (!is_digit(c)) return false;
      mode_ = Mode::integer;
      return true;
  }
}

bool JsonPrefix::end_number(uint8_t c) {
  mode_ = Mode::after_value;
  return feed(c);
}

bool JsonPrefix::feed_string(uint8_t c) {
  if (c == '"') {
    mode_ = key_ ? Mode::colon : Mode::after_value;
    return true;
  }
  if (c == '\\') {
    mode_ = Mode::escape;
    return true;
  }
  if (c < 0x20) return false;  // control characters must be escaped
  if (c < 0x80) return true;
  // Well-formed sequences only: no overlong forms, no surrogates, nothing past U+10FFFF.
  const Utf8Lead lead = utf8_lead(c);
  if (!lead.valid) return false;
  utf8_left_ = lead.trailing;
  utf8_low_ = lead.low;
  utf8_high_ = lead.high;
  mode_ = Mode::utf8;
  return true;
}

bool JsonPrefix::feed_utf8(uint8_t c) {
  if (c < utf8_low_ || c > utf8_high_) return false;
  utf8_low_ = 0x80;
  utf8_high_ = 0xBF;
  if (--utf8_left_ == 0) mode_ = Mode::string;
  return true;
}

bool JsonPrefix::feed_hex(uint8_t c) {
  const int v = hex_value(c);
  if (v < 0) return false;
  code_ = uint16_t(code_ << 4 | v);
  --hex_left_;
  // The first two digits decide whether it is a surrogate: refuse a lone low one, and
  // anything but a low one (DC00-DFFF) where a high one asks for it.
  if (hex_left_ == 3 && low_surrogate_ && code_ != 0xD) return false;
  if (hex_left_ == 2) {
    const bool low = code_ >= 0xDC && code_ <= 0xDF;
    if (low != low_surrogate_) return false;
  }
  if (hex_left_ > 0) return true;
  const bool high = code_ >= 0xD800 && code_ <= 0xDBFF;
  if (low_surrogate_) {
    low_surrogate_ = false;
    mode_ = Mode::string;
  } else {
    mode_ = high ? Mode::low_backslash : Mode::string;
  }
  return true;
}

}  // namespace parley::text

// Whether bytes can still grow into one JSON object (RFC 8259), a byte at a time.
#pragma once

#include <cstdint>
#include <string_view>

namespace parley::text {

// The text so far of a reply that must be one JSON object: a state that takes the next byte,
// or refuses it when no object starts with the text and that byte. It refuses exactly those:
// whatever it takes can be completed, so a generator that only ever picks bytes it takes
// never gets stuck. Beyond RFC 8259 it asks for:
// - valid UTF-8 in strings, and \u escapes of surrogates in pairs (as strict parsers do);
// - at most kMaxDepth nested objects and arrays;
// - between tokens, runs of at most kMaxSpaceRun bytes of spaces and tabs with at most one
//   line feed, so that a model cannot loop on blank lines; no "\r" (a stop string "\n"
//   would cut "\r\n" where nothing but its "\n" can follow);
// - nothing after the object's closing brace, whitespace included.
// A plain value of a few bytes: copy it to try a byte and keep the state before.
class JsonPrefix {
 public:
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxSpaceRun = 32;

  // False when no object starts with the text so far and `c`; the state is then spoiled
  // (try bytes on a copy).
  bool feed(uint8_t c);
  // Feeds each byte in turn until one is refused; how many were taken (bytes.size() when
  // all; fewer: the state spoiled).
  size_t feed_taken(std::string_view bytes);
  // Feeds each byte in turn; false at the first one refused (the state spoiled).
  bool feed(std::string_view bytes) { return feed_taken(bytes) == bytes.size(); }
  // The object has closed: the text is one whole JSON object, and no byte is taken any more.
  bool complete() const { return mode_ == Mode::done; }
  // Inside a string, between characters (not in an escape or a multi-byte character): the
  // bytes up to the string's closing quote may be the same whatever came before.
  bool between_string_characters() const { return mode_ == Mode::string; }

  // What the next byte may be, coarsely (for a reader that follows the structure).
  enum class Expect : uint8_t {
    object,          // the object's '{'
    key_or_close,    // a key or '}'
    key,             // a key
    colon,           // ':'
    value_or_close,  // a value or ']'
    value,           // a value
    after_value,     // ',' or the innermost container's closing bracket
    token,           // more of a string, a literal or a number that cannot end yet
    number,          // more of a number, or a byte that ends it (',', a bracket, whitespace)
    done,            // nothing
  };
  Expect expect() const;
  // The open objects and arrays.
  int depth() const { return depth_; }
  // The innermost open container is an array.
  bool in_array() const { return depth_ > 0 && ((arrays_ >> (depth_ - 1)) & 1); }

  bool operator==(const JsonPrefix&) const = default;

  // How many of text's first bytes a new state takes (text.size() when it takes all).
  static size_t taken_length(std::string_view text) { return JsonPrefix().feed_taken(text); }

 private:
  enum class Mode : uint8_t {
    start,          // before the object: whitespace, then '{'
    key_or_close,   // just after '{': a key or '}'
    key,            // after ',' in an object: a key
    colon,          // after a key
    value,          // after ':' or ',' in an array
    value_or_close, // just after '['
    after_value,    // ',' or the bracket that closes the innermost container
    string,         // inside a string (key_ says which kind)
    escape,         // after '\' in a string
    hex,            // in the 4 hex digits of \u (hex_left_ of them to come)
    low_backslash,  // after a high surrogate's escape: '\' must follow
    low_u,          // ... then 'u'
    utf8,           // inside a multi-byte character (utf8_left_ bytes to come)
    literal,        // inside true, false or null
    minus,          // after a number's '-': a digit
    zero,           // a number's integer part is 0
    integer,        // in a number's integer part (1-9 first)
    point,          // after '.': a digit
    fraction,       // in the fraction's digits
    exponent,       // after 'e' or 'E': a sign or a digit
    exponent_sign,  // after the exponent's sign: a digit
    exponent_digits,
    done,           // the object has closed
  };

  bool feed_space(uint8_t c);                  // whitespace between tokens; false if not one
  bool open(bool array);                       // '{' or '['
  bool close(bool array);                      // '}' or ']'
  bool start_value(uint8_t c);                 // the first byte of a value
  void start_hex(bool low_surrogate);          // after a \u
  bool end_number(uint8_t c);                  // a byte after a number that may end there
  bool feed_string(uint8_t c);
  bool feed_hex(uint8_t c);
  bool feed_utf8(uint8_t c);

  uint64_t arrays_ = 0;        // bit i: the container at depth i + 1 is an array
  Mode mode_ = Mode::start;
  uint8_t depth_ = 0;          // open containers
  uint8_t space_run_ = 0;      // whitespace bytes since the last token
  bool space_break_ = false;   // a '\n' in the run
  bool key_ = false;           // the string (or escape) being read is an object's key
  bool low_surrogate_ = false; // the \u being read must be a low surrogate
  uint8_t hex_left_ = 0;
  uint8_t utf8_left_ = 0;
  uint8_t utf8_low_ = 0x80;    // the range of the next continuation byte
  uint8_t utf8_high_ = 0xBF;
  uint8_t literal_ = 0;        // which literal (an index) and, below, how far into it
  uint8_t literal_at_ = 0;
  uint16_t code_ = 0;          // the \u escape's value so far
};

}  // namespace parley::text

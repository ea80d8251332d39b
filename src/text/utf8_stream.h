// Token ids -> text for a streaming callback, cut only at whole UTF-8 code points.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/utf8_sequence.h"

namespace parley::text {

class Tokenizer;

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

using parley::is_valid_utf8;  // (common/utf8_sequence.h)

// How many bytes at the end of `s` start a code point that more bytes could complete: what a
// Utf8Stream holds back, and its finish() turns into one U+FFFD. 0 when none.
size_t unfinished_tail_length(std::string_view s);

// Collects bytes and hands out the longest run of whole code points. Bytes that can never
// become a valid sequence are replaced by U+FFFD, so the output is always valid UTF-8; so is a
// NUL byte, so that the text reads whole as a C string.
class Utf8Stream {
 public:
  // With `bytes_at`: where in the text handed out the first of `bytes` shows (the start of
  // the code point it is part of), or npos when the stream holds it back.
  std::string push(std::string_view bytes, size_t* bytes_at = nullptr);
  // Ends the stream: an incomplete tail becomes U+FFFD.
  std::string finish();

 private:
  std::string pending_;
};

// A reply's ids -> text. With strip_leading_space, a space at the very start of the reply is
// dropped, as sentencepiece drops it at the start of a text (chat replies); a continuation of
// running text (the raw template) keeps it, except right after BOS.
class DetokenizeStream {
 public:
  DetokenizeStream(const Tokenizer& tokenizer, bool strip_leading_space);
  // With `text_at`: where in the text handed out the id's own text starts, or npos when none
  // of it shows yet (bytes of a character still unfinished, or a piece with no text).
  std::string push(int32_t id, size_t* text_at = nullptr);
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool strip_next_space_;    // the reply's first bytes lose a leading ' '
  bool after_bos_ = false;   // the next piece loses what sentencepiece drops at a text's start
  Utf8Stream utf8_;
};

}  // namespace parley::text

#include "text/utf8_stream.h"

#include <algorithm>

#include "common/utf8_sequence.h"
#include "text/tokenizer.h"

namespace parley::text {
size_t unfinished_tail_length(std::string_view s) {
  for (size_t n = 1; n <= std::min<size_t>(3, s.size()); ++n) {
    const Utf8Sequence seq = next_utf8_sequence(s.substr(s.size() - n));
    if (seq.kind == Utf8Sequence::incomplete && seq.length == n) return n;
  }
  return 0;
}

std::string Utf8Stream::push(std::string_view bytes, size_t* bytes_at) {
  const size_t held = pending_.size();  // bytes before the new ones
  if (bytes_at) *bytes_at = std::string::npos;
  pending_.append(bytes);
  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const Utf8Sequence seq = next_utf8_sequence(rest);
    if (seq.kind == Utf8Sequence::incomplete) break;
    const size_t seq_begin = pending_.size() - rest.size();
    if (bytes_at && !bytes.empty() && seq_begin <= held && held < seq_begin + seq.length) {
      *bytes_at = out.size();
    }
    // A NUL would end the text for every C caller that reads it as a string: U+FFFD too.
    if (seq.kind == Utf8Sequence::whole && rest[0] != '\0') {
      out.append(rest.substr(0, seq.length));
    } else {
      out.append(kReplacementCharacter);
    }
    rest.remove_prefix(seq.length);
  }
  pending_.erase(0, pending_.size() - rest.size());
  return out;
}

std::string Utf8Stream::finish() {
  // A pending tail is a valid start cut short: one maximal subpart, one U+FFFD.
  std::string out = pending_.empty() ? std::string() : std::string(kReplacementCharacter);
  pending_.clear();
  return out;
}

DetokenizeStream::DetokenizeStream(const Tokenizer& tokenizer, bool strip_leading_space)
    : tokenizer_(tokenizer), strip_next_space_(strip_leading_space) {}

std::string DetokenizeStream::push(int32_t id, size_t* text_at) {
  if (text_at) *text_at = std::string::npos;
  std::string bytes = tokenizer_.piece_bytes(id);
  if (id == tokenizer_.bos_id()) after_bos_ = true;
  if (bytes.empty()) return {};  // control pieces neither show nor end the start of a text

  if (bytes.front() == ' ') {
    if (strip_next_space_) {
      bytes.erase(0, 1);
    } else if (after_bos_) {
      // sentencepiece drops the U+2581 of the first piece of a text, but not a <0x20> byte
      // piece nor the unknown piece's surface; decoding the piece alone tells them apart.
      const std::string alone = tokenizer_.decode(std::span<const int32_t>(&id, 1));
      if (std::string_view(bytes).substr(1) == alone) bytes.erase(0, 1);
    }
  }
  strip_next_space_ = false;
  after_bos_ = false;
  return utf8_.push(bytes, text_at);
}

std::string DetokenizeStream::finish() { return utf8_.finish(); }

}  // namespace parley::text

// Which tokens may come next in a reply that must be one JSON object.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "text/json_prefix.h"
#include "text/schema_prefix.h"
#include "text/tokenizer.h"

namespace parley::engine {

// The vocabulary's tokens sorted by the bytes they show, so that tokens that start alike share
// the walk of SchemaPrefix over their common start (and a refused start rules out all of them
// at once). Inside a string, where most tokens go, the tokens of plain text (no quote, no
// control character, whole UTF-8 characters, whole escapes) are allowed without a walk: only
// the others are walked.
class JsonVocabulary {
 public:
  // Leaves out the tokens that show no text (control pieces, unused ones) and the unknown
  // piece (its " ⁇ " is not the model's text).
  explicit JsonVocabulary(const text::Tokenizer& tokenizer);

  // allowed[id] = 1 for each token whose bytes `state` takes whole, 0 for the others.
  // allowed.size() is the vocabulary's.
  void allowed(const text::SchemaPrefix& state, std::span<uint8_t> allowed) const;

  // The bytes the walk feeds for `id` (as Tokenizer::piece_bytes; "" for tokens left out).
  std::string_view bytes(int32_t id) const;

 private:
  struct Entry {
    uint32_t offset;  // into bytes_
    uint32_t length;
    uint32_t shared;  // leading bytes in common with the entry before
    int32_t id;
  };
  // Sets allowed[id] for the entries `state` takes whole (the others are left as they are).
  // State: text::JsonPrefix or text::SchemaPrefix.
  template <typename State>
  void walk(const std::vector<Entry>& entries, const State& state,
            std::span<uint8_t> allowed) const;
  template <typename State>
  void allowed_by(const State& state, std::span<uint8_t> allowed) const;

  std::string bytes_;
  std::vector<Entry> entries_;         // sorted by their bytes
  std::vector<Entry> not_plain_text_;  // the same, without the tokens of plain text
  std::vector<uint8_t> plain_text_;    // by id: 1 for a token of plain text
  std::vector<uint32_t> entry_of_;     // by id: index into entries_, or UINT32_MAX
  size_t longest_ = 0;
};

}  // namespace parley::engine

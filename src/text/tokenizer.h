// Strings <-> token ids through sentencepiece. Built from a tokenizer.model's bytes or from a
// GGUF vocabulary (turned into a sentencepiece ModelProto in memory).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer_source.h"

namespace parley::text {

class Tokenizer {
 public:
  // A tokenizer.model source gets its added tokens and padding pieces appended first
  // (append_added_pieces). Throws Error(bad_model) when the source cannot be turned into a
  // tokenizer, or names a BOS, EOS or end id outside the vocabulary or of a piece that is not
  // a control piece.
  explicit Tokenizer(const model::TokenizerSource& source);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Plain text -> ids; control tokens are never produced from text (nor user-defined pieces
  // that look like control ones: mark_control_looking_pieces). No BOS is added.
  // Throws Error(invalid_argument) on invalid UTF-8.
  std::vector<int32_t> encode(std::string_view text) const;

  // Plain text that continues other text, as a model writing on would give it: a leading
  // space becomes the next word's U+2581, and text without one joins what came before
  // (",", "s"), where encode() would put a U+2581 first; the spaces it ends with are kept
  // (keep_trailing_spaces). Equals encode() for a tokenizer without a dummy prefix, but for
  // those spaces. Throws as encode().
  std::vector<int32_t> encode_continuation(std::string_view text) const;

  // `ids` (of `text`) followed by the space pieces for the spaces `text` ends with that a
  // normalizer dropping extra whitespace left out: for a reply's text, every byte of which
  // the conversation's ids must say. encode_continuation() does this itself.
  std::vector<int32_t> keep_trailing_spaces(std::string_view text,
                                            std::vector<int32_t> ids) const;

  // Ids -> text as sentencepiece DecodeIds does (control tokens vanish, byte pieces are
  // joined, the leading space of the text is dropped), except that a NUL byte becomes U+FFFD.
  // Throws Error(invalid_argument) for an id outside [0, n_vocab).
  std::string decode(std::span<const int32_t> ids) const;

  // The bytes one token stands for in running text: U+2581 -> ' ', <0xNN> -> that byte,
  // control pieces -> "", the unknown piece -> what DecodeIds gives for it (" ⁇ ",
  // U+2047 between spaces). May be part of a UTF-8 sequence. Throws Error(invalid_argument)
  // for an id outside [0, n_vocab).
  std::string piece_bytes(int32_t id) const;

  // A control or user-defined token whose piece is exactly `piece` (e.g. "<|im_start|>").
  std::optional<int32_t> find_special(std::string_view piece) const;

  int32_t n_vocab() const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  // Every id that ends a reply when generated: the EOS first, then the others the model's
  // files name (an eos_token_id list, generation_config.json, GGUF end-of-turn/message).
  const std::vector<int32_t>& end_ids() const;
  bool is_control(int32_t id) const;
  bool is_unknown(int32_t id) const;
  // Whether encode() puts U+2581 before the text (the normalizer's add_dummy_prefix).
  bool adds_dummy_prefix() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::text

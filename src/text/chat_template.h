// Chat templates render only the NEW part of a conversation into token ids. A template is a
// list of segments: control tokens (inserted as ids) and text (tokenized as plain text, one
// encode() per text run between control tokens, as llama.cpp and sentencepiece do). User text
// is always plain text, so a user typing "</s>" gets those characters, never the token.
// Markers such as "[INST]" or "<|user|>" become ids only where the vocabulary has them as
// control tokens; otherwise they are text.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parley::text {

class Tokenizer;

enum class TemplateKind { raw, llama2, chatml, zephyr, mistral };

std::string_view template_name(TemplateKind kind);
// "raw", "llama2", "chatml", "zephyr", "mistral"; nullopt for anything else.
std::optional<TemplateKind> template_from_name(std::string_view name);
// Recognises the family of a model's own (Jinja) template text; raw when none or unknown.
TemplateKind template_from_model(std::string_view jinja);

class ChatTemplate {
 public:
  ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer);

  TemplateKind kind() const { return kind_; }

  // Ids to prefill for a new user message, ending with the assistant's prefix.
  //   first:         nothing is in the conversation yet (BOS and the system prompt go first)
  //   system_prompt: rendered only when first and not empty
  // With raw, the first turn is BOS + system prompt + user text as one text; later turns are
  // the user text alone.
  std::vector<int32_t> render_user_turn(std::string_view system_prompt, std::string_view user,
                                        bool first) const;

  // The system prompt alone, rendered as the start of a conversation (for prefix sharing and
  // for checking that it fits). Empty when there is no system prompt.
  std::vector<int32_t> render_system(std::string_view system_prompt) const;

  // Ids of a reply the caller wrote (or its beginning), as the published template renders
  // it, so that a streamed reply written back gives the ids it came from:
  //   chatml, zephyr: the reply continues the text run of "assistant\n"
  //     (Tokenizer::encode_continuation: "Hi" gets no U+2581, " Hi" does);
  //   llama2, mistral: the reply follows "[/INST] ", so it is encoded on its own (a reply's
  //     first word has the leading space sentencepiece writes, which streaming drops; one
  //     written is taken as that space); llama2 strips the reply first (str.strip()), its end
  //     only when `whole` (the whole reply, not a beginning the model goes on from);
  //   raw: it continues the text before it (" so" starts a word, "," joins the last one),
  //     except after BOS (`after_id`, the id the reply follows), where it starts a text, as
  //     a llama2 reply does.
  // Empty for "".
  std::vector<int32_t> render_reply(std::string_view reply, int32_t after_id,
                                    bool whole = false) const;
  // Ids of text that goes on from a reply's ids (Tokenizer::encode_continuation: " and"
  // starts a word, "," joins the last one); llama2 strips the end of the text that
  // `ends_reply`, as its template strips the reply.
  std::vector<int32_t> render_more_of_reply(std::string_view text, bool ends_reply) const;

  // Ids that close an assistant reply which stopped before its end token (max_tokens, stop),
  // after `reply`, the ids it has: <|im_end|> (chatml), EOS (zephyr, mistral), " </s>"
  // (llama2: "[/INST] " + reply.strip() + " </s>": the pieces of one space where the
  // normalizer keeps a text's last spaces, of none after a reply whose last piece ends with
  // a space, of two after an empty reply, then EOS).
  std::vector<int32_t> close_reply(std::span<const int32_t> reply) const;
  // The ids that end a reply as the model ends one: close_reply()'s when they end with one of
  // the stop tokens (<|im_end|> where the vocabulary has it, llama2's " </s>"); else the EOS
  // (raw, and a marker the vocabulary lacks, which the model cannot write as one token).
  std::vector<int32_t> end_reply(std::span<const int32_t> reply) const;

  // Ids that end a reply when generated (EOS and the model's other end ids always,
  // Tokenizer::end_ids; <|im_end|> for chatml; BOS for raw).
  const std::vector<int32_t>& stop_tokens() const { return stop_tokens_; }

  // Whether a reply's first space is dropped when streamed: where the template puts a space
  // between the prefix and the reply (llama2, mistral), as render_reply takes it back.
  bool strip_reply_leading_space() const {
    return kind_ == TemplateKind::llama2 || kind_ == TemplateKind::mistral;
  }

 private:
  struct Segment {
    int32_t id = -1;   // a control token, or -1 for text
    std::string text;
    bool ends_run = false;  // text encoded on its own, not joined with the text after it
  };
  static Segment token(int32_t id) { return {id, {}, false}; }
  static Segment text(std::string text) { return {-1, std::move(text), false}; }
  std::vector<int32_t> tokenize(const std::vector<Segment>& segments) const;
  Segment marker(std::string_view piece) const;  // id when the vocabulary has it, else text
  // The ids `n` spaces at the end of a text run get: U+2581 pieces, or none where the
  // normalizer drops trailing whitespace.
  std::vector<int32_t> trailing_spaces(size_t n) const;
  // BOS and, when not empty, the system prompt's part of the format.
  std::vector<Segment> start_segments(std::string_view system_prompt) const;
  // The user's message up to the assistant's prefix; `after_system` when start_segments
  // rendered a system prompt just before (llama2 and mistral put it inside the first [INST]).
  std::vector<Segment> turn_segments(std::string_view user, bool first, bool after_system) const;

  TemplateKind kind_;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> stop_tokens_;
  // llama2's close: trailing_spaces(n) for n = 0, 1, 2, computed once.
  std::array<std::vector<int32_t>, 3> trailing_spaces_;
};

}  // namespace parley::text

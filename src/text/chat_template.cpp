#include "text/chat_template.h"

#include <algorithm>
#include <array>
#include <string>

#include "common/add_unique.h"
#include "text/python_strip.h"
#include "text/tokenizer.h"

namespace parley::text {
namespace {

constexpr std::array kAllKinds = {TemplateKind::raw, TemplateKind::llama2, TemplateKind::chatml,
                                  TemplateKind::zephyr, TemplateKind::mistral};

// Markers of the published formats; ids where the vocabulary has them as special tokens.
constexpr std::string_view kInst = "[INST]";
constexpr std::string_view kInstEnd = "[/INST]";
constexpr std::string_view kSpacedInstEnd = " [/INST]";  // v0.1/v0.2; v0.3 writes no space
constexpr std::string_view kSys = "<<SYS>>";
constexpr std::string_view kSysEnd = "<</SYS>>";
constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kZephyrSystem = "<|system|>";
constexpr std::string_view kZephyrUser = "<|user|>";
constexpr std::string_view kZephyrAssistant = "<|assistant|>";
constexpr std::string_view kPhi3End = "<|end|>";  // Phi-3's turns: <|user|> too, not zephyr's

}  // namespace

std::string_view template_name(TemplateKind kind) {
  switch (kind) {
    case TemplateKind::raw: return "raw";
    case TemplateKind::llama2: return "llama2";
    case TemplateKind::chatml: return "chatml";
    case TemplateKind::zephyr: return "zephyr";
    case TemplateKind::mistral: return "mistral";
  }
  return "raw";
}

std::optional<TemplateKind> template_from_name(std::string_view name) {
  for (TemplateKind kind : kAllKinds) {
    if (template_name(kind) == name) return kind;
  }
  return std::nullopt;
}

TemplateKind template_from_model(std::string_view jinja) {
  const auto has = [&](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  if (has(kImStart)) return TemplateKind::chatml;
  if (has(kZephyrUser) && !has(kPhi3End)) return TemplateKind::zephyr;
  if (has(kInst) && has(kSys)) return TemplateKind::llama2;
  if (has(kInst) && has(kSpacedInstEnd)) return TemplateKind::mistral;
  return TemplateKind::raw;
}

ChatTemplate::ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer)
    : kind_(kind), tokenizer_(tokenizer) {
  if (kind_ == TemplateKind::chatml) {
    if (auto im_end = tokenizer_.find_special(kImEnd)) add_unique(stop_tokens_, *im_end);
  }
  for (int32_t id : tokenizer_.end_ids()) add_unique(stop_tokens_, id);
  // Raw models (TinyStories-style) delimit documents with BOS.
  if (kind_ == TemplateKind::raw) add_unique(stop_tokens_, tokenizer_.bos_id());
  if (kind_ == TemplateKind::llama2) {
    for (size_t n = 1; n < trailing_spaces_.size(); ++n) trailing_spaces_[n] = trailing_spaces(n);
  }
}

std::vector<int32_t> ChatTemplate::render_user_turn(std::string_view system_prompt,
                                                    std::string_view user, bool first) const {
  const bool with_system = first && !system_prompt.empty();
  std::vector<Segment> segments;
  if (first) segments = start_segments(with_system ? system_prompt : std::string_view());
  // Llama 2's template strips the system part and the message as one text: with no message
  // after them, the system part's closing newlines go too.
  if (kind_ == TemplateKind::llama2 && with_system && strip_python_space(user, true, true).empty())
    segments.pop_back();
  auto turn = turn_segments(user, first, with_system);
  segments.insert(segments.end(), std::make_move_iterator(turn.begin()),
                  std::make_move_iterator(turn.end()));
  return tokenize(segments);
}

std::vector<int32_t> ChatTemplate::render_system(std::string_view system_prompt) const {
  if (system_prompt.empty()) return {};
  return tokenize(start_segments(system_prompt));
}

std::vector<int32_t> ChatTemplate::render_reply(std::string_view reply, int32_t after_id,
                                                bool whole) const {
  switch (kind_) {
    case TemplateKind::raw:  // continues the message, but after BOS alone starts a text
      if (after_id != tokenizer_.bos_id()) return tokenizer_.encode_continuation(reply);
      break;
    case TemplateKind::chatml:  // "...assistant\n{reply}": in the text run of the prefix
    case TemplateKind::zephyr:
      return tokenizer_.encode_continuation(reply);
    case TemplateKind::llama2:  // "[/INST] " + reply.strip() + " </s>"
      reply = strip_python_space(reply, true, whole);
      break;
    case TemplateKind::mistral:  // "[/INST] " + reply + "</s>"
      break;
  }
  // The space a reply's first word has is the one encoding puts before the text.
  if (reply.starts_with(' ')) reply.remove_prefix(1);
  return tokenizer_.keep_trailing_spaces(reply, tokenize({text(std::string(reply))}));
}

std::vector<int32_t> ChatTemplate::render_more_of_reply(std::string_view text,
                                                        bool ends_reply) const {
  if (kind_ == TemplateKind::llama2 && ends_reply) text = strip_python_space(text, false, true);
  return tokenizer_.encode_continuation(text);
}

std::vector<int32_t> ChatTemplate::close_reply(std::span<const int32_t> reply) const {
  switch (kind_) {
    case TemplateKind::raw: return {};
    case TemplateKind::chatml: return tokenize({marker(kImEnd)});
    case TemplateKind::llama2: {  // " </s>": the space ends the reply's text run
      // (The unknown piece's text, " ⁇ ", is not the reply's.)
      const bool spaced = !reply.empty() && !tokenizer_.is_unknown(reply.back()) &&
                          tokenizer_.piece_bytes(reply.back()).ends_with(' ');
      std::vector<int32_t> ids = trailing_spaces_[reply.empty() ? 2 : spaced ? 0 : 1];
      ids.push_back(tokenizer_.eos_id());
      return ids;
    }
    default: return {tokenizer_.eos_id()};
  }
}

std::vector<int32_t> ChatTemplate::end_reply(std::span<const int32_t> reply) const {
  std::vector<int32_t> close = close_reply(reply);
  const auto is_stop = [&](int32_t id) {
    return std::find(stop_tokens_.begin(), stop_tokens_.end(), id) != stop_tokens_.end();
  };
  if (!close.empty() && is_stop(close.back())) return close;
  return {tokenizer_.eos_id()};
}

std::vector<int32_t> ChatTemplate::trailing_spaces(size_t n) const {
  if (n == 0) return {};
  const std::vector<int32_t> word = tokenizer_.encode("a");
  const std::vector<int32_t> spaced = tokenizer_.encode("a" + std::string(n, ' '));
  if (spaced.size() < word.size() || !std::equal(word.begin(), word.end(), spaced.begin()))
    return {};
  return {spaced.begin() + std::ptrdiff_t(word.size()), spaced.end()};
}

std::vector<ChatTemplate::Segment> ChatTemplate::start_segments(std::string_view system) const {
  const Segment bos = token(tokenizer_.bos_id());
  if (system.empty()) return {bos};
  const std::string sys(system);
  switch (kind_) {
    case TemplateKind::raw:  // the text starts with the system prompt, encoded as a message
      return {bos, Segment{-1, sys, true}};
    case TemplateKind::llama2:  // [INST] <<SYS>>\n{system}\n<</SYS>>\n\n
      return {bos, marker(kInst), text(" "), marker(kSys), text("\n" + sys + "\n"),
              marker(kSysEnd), text("\n\n")};
    case TemplateKind::mistral:  // [INST] {system}\n\n
      return {bos, marker(kInst), text(" " + sys + "\n\n")};
    case TemplateKind::chatml:  // <|im_start|>system\n{system}<|im_end|>\n
      return {bos, marker(kImStart), text("system\n" + sys), marker(kImEnd), text("\n")};
    case TemplateKind::zephyr:  // <|system|>\n{system}</s>\n
      return {bos, marker(kZephyrSystem), text("\n" + sys), token(tokenizer_.eos_id()),
              text("\n")};
  }
  return {bos};
}

std::vector<ChatTemplate::Segment> ChatTemplate::turn_segments(std::string_view user, bool first,
                                                               bool after_system) const {
  const std::string message(user);
  // Llama 2's template strips the message; after the system part (one text with it) only its
  // end.
  const std::string stripped(strip_python_space(user, !after_system, true));
  std::vector<Segment> s;
  switch (kind_) {
    case TemplateKind::raw:
      s = {text(message)};
      break;
    case TemplateKind::llama2:   // <s>[INST] {user.strip()} [/INST]; the first <s> is the start's
    case TemplateKind::mistral:  // [INST] {user} [/INST]; <s> only at the very start
      if (!first && kind_ == TemplateKind::llama2) s.push_back(token(tokenizer_.bos_id()));
      if (!after_system) s.insert(s.end(), {marker(kInst), text(" ")});
      s.insert(s.end(), {text((kind_ == TemplateKind::llama2 ? stripped : message) + " "),
                         marker(kInstEnd)});
      break;
    case TemplateKind::chatml:  // <|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
      if (!first) s.push_back(text("\n"));  // follows the previous reply's <|im_end|>
      s.insert(s.end(), {marker(kImStart), text("user\n" + message), marker(kImEnd), text("\n"),
                         marker(kImStart), text("assistant\n")});
      break;
    case TemplateKind::zephyr:  // <|user|>\n{user}</s>\n<|assistant|>\n
      if (!first) s.push_back(text("\n"));  // follows the previous reply's </s>
      s.insert(s.end(), {marker(kZephyrUser), text("\n" + message), token(tokenizer_.eos_id()),
                         text("\n"), marker(kZephyrAssistant), text("\n")});
      break;
  }
  return s;
}

ChatTemplate::Segment ChatTemplate::marker(std::string_view piece) const {
  if (auto id = tokenizer_.find_special(piece)) return token(*id);
  return text(std::string(piece));
}

std::vector<int32_t> ChatTemplate::tokenize(const std::vector<Segment>& segments) const {
  // Adjacent text segments form one run and one encode() call: a marker that is plain text
  // in this vocabulary tokenizes together with the text around it.
  std::vector<int32_t> ids;
  std::string run;
  const auto flush = [&] {
    if (run.empty()) return;
    const auto run_ids = tokenizer_.encode(run);
    ids.insert(ids.end(), run_ids.begin(), run_ids.end());
    run.clear();
  };
  for (const Segment& s : segments) {
    if (s.id >= 0) {
      flush();
      ids.push_back(s.id);
    } else {
      run += s.text;
      if (s.ends_run) flush();
    }
  }
  flush();
  return ids;
}

}  // namespace parley::text

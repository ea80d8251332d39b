// Fuzz entry point of text input: arbitrary bytes tokenized, rendered as a system prompt and
// a user message by every chat template, and token ids streamed back to text. Two tokenizers:
// one built from a small GGUF-style vocabulary that has the templates' markers as special
// tokens (always), and Llama 2's tokenizer.model from the shared folder when it is there.
// Invariants checked: streamed text is always valid UTF-8, and valid UTF-8 passes through the
// UTF-8 stream unchanged however it is cut (but for NULs, which become U+FFFD); the user text
// streamed past stop strings (the system text's pieces) stops before the first of them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "model/tokenizer_source.h"
#include "text/chat_template.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"
#include "text/utf8_stream.h"

#ifndef PARLEY_SHARED_DIR
#define PARLEY_SHARED_DIR ""
#endif

namespace {

using namespace parley;

std::unique_ptr<text::Tokenizer> synthetic_tokenizer() {
  model::GgufVocab v;
  v.model = "llama";
  auto add = [&](std::string piece, int32_t type) {
    v.tokens.push_back(std::move(piece));
    v.token_types.push_back(type);
    v.scores.push_back(-float(v.tokens.size()));
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 6);
  for (const char* special : {"<|im_start|>", "<|im_end|>", "[INST]", "[/INST]", "<<SYS>>"}) {
    add(special, 3);
  }
  for (const char* marker : {"<</SYS>>", "<|user|>", "<|assistant|>", "<|system|>"}) {
    add(marker, 4);  // user-defined: the templates insert them as ids too
  }
  for (const char* piece : {"\xE2\x96\x81", "\xE2\x96\x81" "t", "he", "\xE2\x96\x81" "the", "e", "t",
                            "h", "a", "\xE2\x96\x81" "a", "\xC3\xA9", "\xE2\x96\x81\xE2\x96\x81",
                            "s", "\xE2\x96\x81" "s", "er", "in", "\xE2\x96\x81" "in"}) {
    add(piece, 1);
  }
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::gguf_vocab;
  source.vocab = std::move(v);
  return std::make_unique<text::Tokenizer>(source);
}

// Llama 2's tokenizer from the shared folder; nullptr (said once, visibly) when absent.
std::unique_ptr<text::Tokenizer> llama2_tokenizer() {
  const char* env = std::getenv("PARLEY_SHARED_DIR");
  const std::string dir = env && *env ? env : PARLEY_SHARED_DIR;
  const std::string path = dir + "/tokenizers/llama2/tokenizer.model";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz_text: SKIPPING the Llama 2 tokenizer: %s not found\n",
                 path.c_str());
    return nullptr;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  model::TokenizerSource source;
  source.proto_bytes = bytes.str();
  return std::make_unique<text::Tokenizer>(source);
}

const text::Tokenizer& pick_tokenizer(bool want_llama2) {
  static const auto synthetic = synthetic_tokenizer();
  static const auto llama2 = llama2_tokenizer();
  return want_llama2 && llama2 ? *llama2 : *synthetic;
}

void require_utf8(const std::string& s) {
  if (!text::is_valid_utf8(s)) std::abort();
}

void stream_ids(const text::Tokenizer& tok, const std::vector<int32_t>& ids, bool strip) {
  text::DetokenizeStream stream(tok, strip);
  std::string out;
  for (int32_t id : ids) out += stream.push(id);
  out += stream.finish();
  require_utf8(out);
}

void render_all(const text::Tokenizer& tok, text::TemplateKind kind, std::string_view system,
                std::string_view user, bool first) {
  const text::ChatTemplate tmpl(kind, tok);
  try {
    stream_ids(tok, tmpl.render_user_turn(system, user, first), tmpl.strip_reply_leading_space());
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) throw;  // only invalid UTF-8 is refused
  }
  try {
    stream_ids(tok, tmpl.render_system(system), false);
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) throw;
  }
  stream_ids(tok, tmpl.close_reply({}), false);
  try {
    const int32_t after_id = first ? tok.bos_id() : -1;
    stream_ids(tok, tmpl.render_reply(user, after_id), tmpl.strip_reply_leading_space());
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) throw;
  }
}

// `text` streamed in chunks past stop strings (the pieces of `stops_bytes` between 0x01 bytes):
// what reaches the sink is the text before the first stop string, cut at whole code points
// when the text is valid UTF-8.
void stop_strings_cut(std::string_view stops_bytes, std::string_view text) {
  std::vector<std::string> strings;
  for (size_t at = 0; at <= stops_bytes.size();) {
    const size_t end = std::min(stops_bytes.find('\x01', at), stops_bytes.size());
    if (end > at && end - at <= text::StopStrings::kMaxBytes) {
      strings.emplace_back(stops_bytes.substr(at, end - at));
    }
    at = end + 1;
  }
  if (strings.empty() || strings.size() > text::StopStrings::kMaxCount) return;
  const text::StopStrings stops(strings);
  std::string grown, delivered;
  size_t streamed = 0;
  std::optional<text::StopStrings::Match> stop;
  for (size_t at = 0; at < text.size() && !stop;) {
    const size_t n = std::min(text.size() - at, size_t(1 + uint8_t(text[at]) % 7));
    grown += text.substr(at, n);
    at += n;
    const auto cut = stops.next_cut(grown, streamed, at == text.size());
    if (cut.end < streamed || cut.end > grown.size()) std::abort();
    delivered += grown.substr(streamed, cut.end - streamed);
    streamed = cut.end;
    stop = cut.stop;
  }
  size_t first = text.size();
  for (const auto& s : strings) first = std::min(first, std::min(text.find(s), text.size()));
  if (delivered != text.substr(0, first)) std::abort();
  if (text::is_valid_utf8(text) && !text::is_valid_utf8(delivered)) std::abort();
}

// The bytes cut into chunks whose sizes come from the bytes themselves.
void utf8_chunks(std::string_view bytes) {
  text::Utf8Stream stream;
  std::string out;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = 1 + uint8_t(bytes[at]) % 5;
    out += stream.push(bytes.substr(at, n));
    at += n;
  }
  out += stream.finish();
  require_utf8(out);
  if (!text::is_valid_utf8(bytes)) return;
  std::string expected;
  for (char c : bytes) expected += c == '\0' ? std::string("\xEF\xBF\xBD") : std::string(1, c);
  if (out != expected) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const text::Tokenizer& tok = pick_tokenizer(control & 0x10);

  try {
    require_utf8(tok.decode(tok.encode(rest)));
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) throw;
  }
  // "system\0user", or all of it as the user message.
  const size_t nul = rest.find('\0');
  const std::string_view system = nul == rest.npos ? std::string_view() : rest.substr(0, nul);
  const std::string_view user = nul == rest.npos ? rest : rest.substr(nul + 1);
  const auto kind = text::TemplateKind(control % 5);
  render_all(tok, kind, system, user, (control & 0x08) != 0);

  // The bytes as token ids (two bytes each, folded into the vocabulary).
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < rest.size(); i += 2) {
    const uint32_t v = uint8_t(rest[i]) | uint32_t(uint8_t(rest[i + 1])) << 8;
    ids.push_back(int32_t(v % uint32_t(tok.n_vocab())));
  }
  stream_ids(tok, ids, (control & 0x20) != 0);
  require_utf8(tok.decode(ids));
  utf8_chunks(rest);
  if (nul != rest.npos && text::is_valid_utf8(system)) stop_strings_cut(system, user);
  return 0;
}

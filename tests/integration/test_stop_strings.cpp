// Stop strings through the C ABI on stories260K: the reply ends before the first one it shows
// (streamed text, kept text and the conversation's tokens agree), and a reply cut so goes on
// exactly as one cut by max_tokens at the tokens it kept.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

struct Reply {
  parley_status status;
  std::string text;      // as returned through the callback
  parley_turn_stats stats;
};

Reply send(parley_session* s, const char* text, uint32_t max_tokens,
           const std::vector<const char*>& stop = {}) {
  parley_generate_options g = greedy_options(max_tokens);
  g.stop = stop.empty() ? nullptr : stop.data();
  g.n_stop = uint32_t(stop.size());
  Reply r{};
  r.stats.struct_size = sizeof r.stats;
  r.status = parley_session_send(s, text, &g, append_text, &r.text, &r.stats);
  return r;
}

parley_turn turn_at(parley_session* s, uint32_t index) {
  parley_turn t{};
  t.struct_size = sizeof t;
  REQUIRE(parley_session_get_turn(s, index, &t) == PARLEY_OK);
  return t;
}

parley_session* new_session(parley_engine* e, const char* chat_template) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = chat_template;
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  return s;
}

std::string detokenize(parley_engine* e, const int32_t* ids, size_t n) {
  std::vector<char> buf(8192);
  size_t len = 0;
  REQUIRE(parley_detokenize(e, ids, n, buf.data(), buf.size(), &len) == PARLEY_OK);
  return std::string(buf.data(), len - 1);  // (len counts the NUL)
}

// Where each reply token's text ends in the reply's text, from detokenizing the reply's first
// tokens (on their own they lose the leading space a reply to the raw template keeps).
std::vector<size_t> token_ends(parley_engine* e, const int32_t* reply_ids, size_t n,
                               const std::string& text) {
  const size_t space = text.size() - detokenize(e, reply_ids, n).size();
  REQUIRE(space <= 1);
  std::vector<size_t> ends;
  for (size_t i = 1; i <= n; ++i) {
    const std::string shown = detokenize(e, reply_ids, i);
    REQUIRE(text.substr(space).starts_with(shown));
    ends.push_back(space + shown.size());
  }
  return ends;
}

// Where a stop string begins: where a token's text ends, or inside a word's token of three
// letters or more: two bytes before its end, or right after its leading space.
enum class Where { token_end, inside_word, after_space };

// A stop string of `len` bytes that first shows in `text` where `where` says, from `from` on.
struct StopAt {
  std::string stop;
  size_t at;
  size_t token;  // the reply token whose text it ends or begins inside
};
StopAt stop_in(const std::string& text, const std::vector<size_t>& ends, size_t from, size_t len,
               Where where) {
  for (size_t i = 1; i < ends.size(); ++i) {
    const size_t at = where == Where::token_end     ? ends[i]
                      : where == Where::inside_word ? ends[i] - 2
                                                    : ends[i - 1] + 1;
    const std::string word = text.substr(ends[i - 1], ends[i] - ends[i - 1]);
    const bool letters = word.size() >= 4 && std::all_of(word.begin() + 1, word.end(), [](char c) {
                           return std::isalpha(static_cast<unsigned char>(c)) != 0;
                         });
    const bool fits = where == Where::token_end ||
                      (letters && (where == Where::inside_word || word.front() == ' '));
    if (at < from || at + len > text.size() || !fits) continue;
    const std::string stop = text.substr(at, len);
    if (text.find(stop) == at) return {stop, at, i};
  }
  FAIL("no such stop string in \"" << text << "\"");
  return {};
}

std::string exported(parley_session* s) {
  size_t n = 0;
  REQUIRE(parley_session_export(s, nullptr, 0, &n) == PARLEY_OK);
  std::string json(n, '\0');
  REQUIRE(parley_session_export(s, json.data(), json.size(), &n) == PARLEY_OK);
  json.resize(n - 1);  // (n counts the NUL)
  return json;
}

constexpr const char* kPrompt = "Once upon a time";
constexpr uint32_t kReplyTokens = 48;

}  // namespace

TEST_CASE("a stop string ends the reply before it: streamed, kept and in tokens alike") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_session* plain = new_session(e, "raw");
  const Reply full = send(plain, kPrompt, kReplyTokens);
  REQUIRE(full.status == PARLEY_OK);
  CHECK(full.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
  CHECK(full.stats.stop_index == -1);
  const std::vector<int32_t> full_tokens = session_tokens(plain);
  REQUIRE(full.text.size() > 40);

  // A stop string from the middle of the reply, where a token's text begins; it ends the
  // reply where it first shows.
  const size_t prompt = full_tokens.size() - kReplyTokens;
  const std::vector<size_t> ends =
      token_ends(e, full_tokens.data() + prompt, kReplyTokens, full.text);
  const auto [stop, at, token] = stop_in(full.text, ends, full.text.size() / 2, 6, Where::token_end);
  parley_session* s = new_session(e, "raw");
  const Reply cut = send(s, kPrompt, kReplyTokens, {"never in a story \x01", stop.c_str()});
  REQUIRE_MESSAGE(cut.status == PARLEY_OK, parley_last_error());
  CHECK(cut.text == full.text.substr(0, at));
  CHECK(std::string(turn_at(s, 1).text) == cut.text);
  CHECK(cut.stats.stop_reason == PARLEY_STOP_STRING);
  CHECK(cut.stats.stop_index == 1);

  // The conversation keeps the reply tokens that brought text before the stop string: a
  // prefix of the uncut reply's, shorter than what was sampled.
  const std::vector<int32_t> tokens = session_tokens(s);
  const uint32_t kept = turn_at(s, 1).n_tokens;
  CHECK(tokens.size() == full_tokens.size() - kReplyTokens + kept);
  CHECK(std::equal(tokens.begin(), tokens.end(), full_tokens.begin()));
  CHECK(kept < cut.stats.generated_tokens);
  CHECK(cut.stats.generated_tokens <= kReplyTokens);
  // The last kept token's text starts before the stop string, the next one's does not
  // (detokenized on their own, the reply's tokens may lose a leading space).
  CHECK(kept == token + 1);
  auto reply_text = [&](uint32_t n_tokens) {
    return detokenize(e, full_tokens.data() + prompt, n_tokens);
  };
  CHECK(reply_text(kept - 1).size() < at);
  CHECK(reply_text(kept).size() + 1 >= at);

  parley_session_close(s);
  parley_session_close(plain);
  parley_engine_close(e);
}

TEST_CASE("a reply cut by a stop string goes on as one cut by max_tokens at its tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  for (const char* chat_template : {"raw", "llama2", "chatml"}) {
    CAPTURE(chat_template);
    parley_session* plain = new_session(e, chat_template);
    const Reply full = send(plain, kPrompt, kReplyTokens);
    REQUIRE(full.status == PARLEY_OK);
    REQUIRE(full.text.size() > 20);

    // (At a token's start: one that begins inside a token's text respells that token.)
    const std::vector<int32_t> full_tokens = session_tokens(plain);
    const size_t prompt = full_tokens.size() - kReplyTokens;
    const std::vector<size_t> ends =
        token_ends(e, full_tokens.data() + prompt, kReplyTokens, full.text);
    const std::string stop = stop_in(full.text, ends, full.text.size() / 3, 4, Where::token_end).stop;
    parley_session* s = new_session(e, chat_template);
    const Reply cut = send(s, kPrompt, kReplyTokens, {stop.c_str()});
    REQUIRE(cut.stats.stop_reason == PARLEY_STOP_STRING);
    const uint32_t kept = turn_at(s, 1).n_tokens;
    REQUIRE(kept > 0);

    parley_session* limited = new_session(e, chat_template);
    const Reply same = send(limited, kPrompt, kept);
    CHECK(same.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
    CHECK(session_tokens(limited) == session_tokens(s));
    // The next turn: the raw template continues the text (an empty message adds nothing, so
    // the reply's last token gives the next); a chat template closes the reply first.
    const char* next = std::string(chat_template) == "raw" ? "" : "What then?";
    const Reply a = send(s, next, 24);
    const Reply b = send(limited, next, 24);
    REQUIRE(a.status == PARLEY_OK);
    CHECK(a.text == b.text);
    CHECK(session_tokens(s) == session_tokens(limited));
    if (std::string(chat_template) == "raw") {
      // Greedy from the same tokens: the uncut reply's own continuation.
      CHECK(full.text.starts_with(cut.text));
      CHECK(full.text.find(a.text, cut.text.size()) != std::string::npos);
    }
    parley_session_close(limited);
    parley_session_close(s);
    parley_session_close(plain);
  }
  parley_engine_close(e);
}

TEST_CASE("a token the stop string begins inside gives way to the tokens of the text kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  // (Right after a word's space, the space alone is kept: the tokenizer's normalizer drops a
  // lone space, the model writes it as a piece of its own.)
  for (const auto& [chat_template, where] :
       {std::pair{"raw", Where::inside_word}, std::pair{"chatml", Where::inside_word},
        std::pair{"raw", Where::after_space}, std::pair{"chatml", Where::after_space}}) {
    CAPTURE(chat_template);
    CAPTURE(int(where));
    parley_session* plain = new_session(e, chat_template);
    const Reply full = send(plain, kPrompt, kReplyTokens);
    REQUIRE(full.status == PARLEY_OK);
    const std::vector<int32_t> full_tokens = session_tokens(plain);
    const size_t prompt = full_tokens.size() - kReplyTokens;
    const std::vector<size_t> ends =
        token_ends(e, full_tokens.data() + prompt, kReplyTokens, full.text);
    const auto [stop, at, token] = stop_in(full.text, ends, full.text.size() / 4, 5, where);
    CAPTURE(stop);

    parley_session* s = new_session(e, chat_template);
    const Reply cut = send(s, kPrompt, kReplyTokens, {stop.c_str()});
    REQUIRE(cut.stats.stop_reason == PARLEY_STOP_STRING);
    CHECK(cut.text == full.text.substr(0, at));
    CHECK(std::string(turn_at(s, 1).text) == cut.text);
    // The tokens before the split one are the uncut reply's; after them come tokens of the
    // split one's text before the stop string, so the reply's tokens say what its text says.
    const std::vector<int32_t> tokens = session_tokens(s);
    REQUIRE(tokens.size() > prompt + token);
    CHECK(std::equal(tokens.begin(), tokens.begin() + long(prompt + token), full_tokens.begin()));
    CHECK(tokens[prompt + token] != full_tokens[prompt + token]);
    CHECK(turn_at(s, 1).n_tokens == tokens.size() - prompt);
    const size_t space =
        full.text.size() - detokenize(e, full_tokens.data() + prompt, kReplyTokens).size();
    const std::string reply = detokenize(e, tokens.data() + prompt, tokens.size() - prompt);
    CHECK(std::string(space, ' ') + reply == cut.text);

    // It goes on as a conversation given those tokens from the start: the split token's KV is
    // gone with it.
    parley_session* copy = nullptr;
    REQUIRE_MESSAGE(parley_session_import(e, exported(s).c_str(), "copy", &copy) == PARLEY_OK,
                    parley_last_error());
    REQUIRE(session_tokens(copy) == tokens);
    const char* next = std::string(chat_template) == "raw" ? "" : "What then?";
    const Reply a = send(s, next, 16);
    const Reply b = send(copy, next, 16);
    REQUIRE_MESSAGE(a.status == PARLEY_OK, parley_last_error());
    CHECK(a.text == b.text);
    CHECK(session_tokens(s) == session_tokens(copy));
    parley_session_close(copy);
    parley_session_close(s);
    parley_session_close(plain);
  }
  parley_engine_close(e);
}

TEST_CASE("a stop string at the start leaves the reply empty; a partial one is streamed last") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_session* plain = new_session(e, "raw");
  const Reply full = send(plain, kPrompt, 24);
  REQUIRE(full.text.size() > 8);
  const std::vector<int32_t> full_tokens = session_tokens(plain);

  parley_session* s = new_session(e, "raw");
  const std::string head = full.text.substr(0, 3);
  const Reply empty = send(s, kPrompt, 24, {head.c_str()});
  CHECK(empty.status == PARLEY_OK);
  CHECK(empty.text.empty());
  CHECK(empty.stats.stop_reason == PARLEY_STOP_STRING);
  CHECK(turn_at(s, 1).n_tokens == 0);
  CHECK(session_tokens(s).size() == full_tokens.size() - 24);
  // Going on with nothing added gives the uncut reply from its start.
  const Reply again = send(s, "", 24);
  CHECK(again.text == full.text);
  CHECK(session_tokens(s) == full_tokens);
  parley_session_close(s);

  // The reply's last bytes start a stop string that never completes: held back while the
  // reply grows, then streamed when it ends.
  s = new_session(e, "raw");
  const std::string tail = full.text.substr(full.text.size() - 3) + "QQ";
  const Reply held = send(s, kPrompt, 24, {tail.c_str()});
  CHECK(held.text == full.text);
  CHECK(held.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
  CHECK(held.stats.stop_index == -1);
  parley_session_close(s);
  parley_session_close(plain);
  parley_engine_close(e);
}

TEST_CASE("a stopped reply is committed as cut and reads back so after a restart") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  const std::string model = gguf.string(), store = (dir / "store.db").string();
  parley_engine* e = open_engine_with_store(model, store);
  parley_session* s = create_raw_session(e, "kept");
  const Reply full = send(s, kPrompt, 32);
  REQUIRE(full.text.size() > 20);
  REQUIRE(parley_session_rewind(s, 2) == PARLEY_OK);
  const std::string stop = full.text.substr(full.text.size() / 2, 5);
  const Reply cut = send(s, kPrompt, 32, {stop.c_str()});
  REQUIRE(cut.stats.stop_reason == PARLEY_STOP_STRING);
  const std::vector<int32_t> tokens = session_tokens(s);
  parley_session_close(s);
  parley_engine_close(e);

  e = open_engine_with_store(model, store);
  REQUIRE(parley_session_open(e, "kept", &s) == PARLEY_OK);
  CHECK(std::string(turn_at(s, 1).text) == cut.text);
  CHECK(session_tokens(s) == tokens);
  CHECK(send(s, " The end.", 8).status == PARLEY_OK);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("stop_reason: the end token, a stop by the callback, the context's end") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_session* s = new_session(e, "raw");
  parley_generate_options g = greedy_options(400);
  g.ignore_eos = 0;  // a story ends with BOS (the raw template's end token here)
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  REQUIRE(parley_session_send(s, kPrompt, &g, nullptr, nullptr, &stats) == PARLEY_OK);
  CHECK(stats.stop_reason ==
        (stats.generated_tokens < 400 ? PARLEY_STOP_END_TOKEN : PARLEY_STOP_MAX_TOKENS));

  const auto stop_at_once = [](const char*, size_t, void*) { return 1; };
  g = greedy_options(16);
  CHECK(parley_session_send(s, " Then", &g, stop_at_once, nullptr, &stats) ==
        PARLEY_E_CANCELLED);
  CHECK(stats.stop_reason == PARLEY_STOP_CANCELLED);
  parley_session_close(s);

  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  s = new_session(e, "raw");
  g = greedy_options(0);  // up to the context's end
  REQUIRE(parley_session_send(s, kPrompt, &g, nullptr, nullptr, &stats) == PARLEY_OK);
  CHECK(stats.stop_reason == PARLEY_STOP_CONTEXT_END);
  CHECK(session_tokens(s).size() == info.context_length);
  parley_session_close(s);
  parley_engine_close(e);
}

namespace {

// Byte pieces of stories260K's vocabulary: <0x00> is id 3.
int32_t byte_piece(uint8_t byte) { return 3 + byte; }

// A reply of the byte pieces `bytes` in that order, for a greedy send or continue: each bias
// lifts its piece far above the model's logits, and the repeat penalty (4) puts a piece once
// used below the next one.
struct ForcedBytes {
  std::vector<parley_logit_bias> bias;
  std::vector<const char*> stop;
  parley_generate_options options;
  ForcedBytes(const std::vector<uint8_t>& bytes, std::vector<const char*> stop_strings)
      : stop(std::move(stop_strings)) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      bias.push_back({byte_piece(bytes[i]), 300.0f - 100.0f * float(i)});
    }
    options = greedy_options(uint32_t(bytes.size()));
    options.logit_bias = bias.data();
    options.n_logit_bias = uint32_t(bias.size());
    options.repeat_penalty = 4;
    options.stop = stop.empty() ? nullptr : stop.data();
    options.n_stop = uint32_t(stop.size());
  }
};

// The ids of the reply that ends the conversation.
std::vector<int32_t> reply_tokens(parley_session* s) {
  const std::vector<int32_t> all = session_tokens(s);
  const size_t n = turn_at(s, 1).n_tokens;
  return {all.end() - long(n), all.end()};
}

}  // namespace

TEST_CASE("a stop string that begins with a character's first byte takes that byte's token") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  REQUIRE(detokenize(e, std::vector<int32_t>{byte_piece(0xC3), byte_piece(0xA9)}.data(), 2) ==
          "\xC3\xA9");
  const std::string e_acute = "\xC3\xA9", replacement = "\xEF\xBF\xBD";

  SUBCASE("in one reply") {
    // <0xE2> alone, then "é" from <0xC3><0xA9>.
    parley_session* s = new_session(e, "raw");
    ForcedBytes forced({0xE2, 0xC3, 0xA9}, {});
    std::string streamed;
    REQUIRE(parley_session_send(s, kPrompt, &forced.options, append_text, &streamed, nullptr) == 0);
    REQUIRE(streamed == replacement + e_acute);
    REQUIRE(reply_tokens(s).size() == 3);
    parley_session_close(s);

    s = new_session(e, "raw");
    ForcedBytes stopped({0xE2, 0xC3, 0xA9}, {e_acute.c_str()});
    streamed.clear();
    parley_turn_stats stats{};
    stats.struct_size = sizeof stats;
    REQUIRE(parley_session_send(s, kPrompt, &stopped.options, append_text, &streamed, &stats) == 0);
    CHECK(stats.stop_reason == PARLEY_STOP_STRING);
    CHECK(streamed == replacement);
    CHECK(std::string(turn_at(s, 1).text) == replacement);
    CHECK(reply_tokens(s) == std::vector<int32_t>{byte_piece(0xE2)});
    parley_session_close(s);
  }
  SUBCASE("going on from a reply cut inside the character") {
    // "€" is <0xE2><0x82><0xAC>: the first two bytes end two replies cut at max_tokens.
    parley_session* s = new_session(e, "raw");
    ForcedBytes first({0xE2}, {});
    REQUIRE(parley_session_send(s, kPrompt, &first.options, nullptr, nullptr, nullptr) == 0);
    ForcedBytes second({0x82}, {});
    REQUIRE(parley_session_continue(s, &second.options, nullptr, nullptr, nullptr) == 0);
    REQUIRE(reply_tokens(s).size() == 2);
    const std::string euro = "\xE2\x82\xAC";
    ForcedBytes last({0xAC}, {euro.c_str()});
    std::string streamed;
    REQUIRE(parley_session_continue(s, &last.options, append_text, &streamed, nullptr) == 0);
    CHECK(streamed.empty());
    CHECK(std::string(turn_at(s, 1).text).empty());
    CHECK(reply_tokens(s).empty());
    parley_session_close(s);
  }
  parley_engine_close(e);
}

// A callback that stops the reply keeps the text it was given: text held back then (it may
// have begun a stop string) is not the reply's, in its text as in its tokens.
TEST_CASE("a reply stopped by the callback is the text the callback was given") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_session* plain = new_session(e, "raw");
  const Reply full = send(plain, kPrompt, kReplyTokens);
  REQUIRE(full.text.size() > 40);
  const std::vector<int32_t> full_ids = reply_tokens(plain);
  const std::vector<size_t> ends = token_ends(e, full_ids.data(), full_ids.size(), full.text);
  parley_session_close(plain);

  struct Stopper {
    std::string streamed;
    size_t stop_from;  // stops at the first text that reaches this length
  };
  const parley_text_fn stop_when_reached = [](const char* utf8, size_t len, void* user) {
    auto* stopper = static_cast<Stopper*>(user);
    stopper->streamed.append(utf8, len);
    return stopper->streamed.size() >= stopper->stop_from ? 1 : 0;
  };
  for (const Where where : {Where::inside_word, Where::after_space}) {
    // A stop string that begins inside a token and never completes: the token's text from
    // there on is held back when the callback, given the text before it, stops the reply.
    const StopAt begun = stop_in(full.text, ends, full.text.size() / 3, 3, where);
    const std::string stop = full.text.substr(begun.at, ends[begun.token] + 1 - begun.at) + "QQ";
    CAPTURE(stop);
    parley_session* s = new_session(e, "raw");
    parley_generate_options g = greedy_options(kReplyTokens);
    const char* stops[] = {stop.c_str()};
    g.stop = stops;
    g.n_stop = 1;
    Stopper stopper{"", begun.at};
    CHECK(parley_session_send(s, kPrompt, &g, stop_when_reached, &stopper, nullptr) ==
          PARLEY_E_CANCELLED);
    CHECK(stopper.streamed == full.text.substr(0, begun.at));
    const std::string kept = turn_at(s, 1).text;
    CHECK(kept == stopper.streamed);
    const std::vector<int32_t> ids = reply_tokens(s);
    CHECK(detokenize(e, ids.data(), ids.size()) == kept.substr(kept.starts_with(' ') ? 1 : 0));
    // It goes on as a reply cut at those tokens.
    CHECK(send(s, "", 4).status == PARLEY_OK);
    parley_session_close(s);
  }

  // Stopping at the reply's last text, which was held back until the reply ended, is a stop
  // too; the reply is whole.
  const std::string tail = full.text.substr(full.text.size() - 3) + "QQ";
  parley_session* s = new_session(e, "raw");
  parley_generate_options g = greedy_options(kReplyTokens);
  const char* stops[] = {tail.c_str()};
  g.stop = stops;
  g.n_stop = 1;
  Stopper stopper{"", full.text.size()};
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  CHECK(parley_session_send(s, kPrompt, &g, stop_when_reached, &stopper, &stats) ==
        PARLEY_E_CANCELLED);
  CHECK(stats.stop_reason == PARLEY_STOP_CANCELLED);
  CHECK(stopper.streamed == full.text);
  CHECK(std::string(turn_at(s, 1).text) == full.text);
  parley_session_close(s);
  parley_engine_close(e);
}

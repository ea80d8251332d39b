// Continuing without a new user message (Session::continue_reply, parley_session_continue): a
// reply cut short goes on as one longer reply would have, a rewound reply is generated anew,
// and what cannot go on is refused with the conversation left as it was.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "model_runner.h"
#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

engine::GenerateParams greedy(uint32_t max_tokens) {
  engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// Continues `s`, returning the streamed text.
std::string continue_reply(engine::Session& s, const engine::GenerateParams& params,
                           engine::TurnStats& stats) {
  std::string streamed;
  s.continue_reply(params, [&](std::string_view piece) { return streamed.append(piece), true; },
                   stats);
  return streamed;
}

Status status_of_continue(engine::Session& s, const engine::GenerateParams& params) {
  engine::TurnStats stats;
  try {
    s.continue_reply(params, nullptr, stats);
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

}  // namespace

TEST_CASE("a reply cut at max_tokens and continued is the reply one longer call gives") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  for (auto kv_type : {kv::KvType::f32, kv::KvType::int8}) {
    auto engine = open_engine(gguf.string(), kv_type);
    for (const char* chat_template : {"raw", "llama2", "chatml"}) {
      CAPTURE(std::string(kv::kv_type_name(kv_type)));
      CAPTURE(chat_template);
      engine::Session whole(engine, session_options("", chat_template));
      greedy_turn(whole, "Once upon a time", 24);

      engine::Session pieces(engine, session_options("", chat_template));
      greedy_turn(pieces, "Once upon a time", 5);
      std::string text = pieces.messages().back().text;
      for (uint32_t n : {7u, 12u}) {
        const size_t before = pieces.tokens().size();
        engine::TurnStats stats;
        const std::string streamed = continue_reply(pieces, greedy(n), stats);
        CHECK(pieces.messages().back().text == text + streamed);
        text += streamed;
        CHECK(pieces.messages().size() == 2);  // still one reply
        CHECK(pieces.tokens().size() == before + n);
        CHECK(stats.kept);
        CHECK(stats.prompt_tokens == 0);
        CHECK(stats.generated_tokens == n);
        CHECK(stats.computed_tokens == 1);  // the last token, whose logits start the rest
        CHECK(stats.reused_tokens == before - 1);
        CHECK(stats.kv_source == engine::KvSource::resident);
        CHECK(stats.stop_reason == engine::StopReason::max_tokens);
      }
      CHECK(pieces.tokens() == whole.tokens());
      CHECK(pieces.messages().back().text == whole.messages().back().text);
      CHECK(pieces.messages().back().n_tokens == whole.messages().back().n_tokens);
      CHECK(!pieces.messages().back().closed);
    }
  }
}

TEST_CASE("stop strings on a continuation: one that begins in the earlier text ends it there") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  engine::Session whole(engine, session_options("", "raw"));
  greedy_turn(whole, "Once upon a time", 32);
  const std::string full = whole.messages().back().text;
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "Once upon a time", 8);
  const std::string cut = s.messages().back().text;
  REQUIRE(full.starts_with(cut));
  REQUIRE(full.size() > cut.size() + 12);

  // Across the boundary: 3 bytes already streamed, 5 new.
  const std::string across = full.substr(cut.size() - 3, 8);
  REQUIRE(full.find(across) == cut.size() - 3);
  const auto tokens = s.tokens();
  engine::GenerateParams params = greedy(16);
  params.stop_strings = text::StopStrings({"never there", across});
  engine::TurnStats stats;
  CHECK(continue_reply(s, params, stats).empty());  // nothing past the earlier text
  CHECK(stats.stop_reason == engine::StopReason::stop_string);
  CHECK(stats.stop_index == 1);
  CHECK(s.messages().back().text == cut);  // what was streamed before stays
  CHECK(s.tokens() == tokens);             // the new tokens brought only stop-string text
  CHECK(!s.messages().back().closed);

  // Wholly in the new text: as one call would have ended.
  const std::string later = full.substr(cut.size() + 6, 4);
  const size_t at = full.find(later, cut.size());
  params.stop_strings = text::StopStrings({later});
  CHECK(continue_reply(s, params, stats) == full.substr(cut.size(), at - cut.size()));
  CHECK(s.messages().back().text == full.substr(0, at));
  CHECK(stats.stop_reason == engine::StopReason::stop_string);
}

TEST_CASE("a stop string that begins in a reply prefix ends the reply right after it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  engine::GenerateParams params = greedy(16);
  params.reply_prefix = "The little";
  engine::Session unstopped(engine, session_options("", "llama2"));
  engine::TurnStats stats;
  unstopped.send("Tell me a story.", params, nullptr, stats);
  const std::string full = unstopped.messages().back().text;
  REQUIRE(full.size() > params.reply_prefix.size() + 3);
  const std::string across = full.substr(params.reply_prefix.size() - 2, 5);  // "le" + 3 more
  REQUIRE(full.find(across) == params.reply_prefix.size() - 2);

  params.stop_strings = text::StopStrings({across});
  engine::Session s(engine, session_options("", "llama2"));
  std::string streamed;
  s.send("Tell me a story.", params,
         [&](std::string_view piece) { return streamed.append(piece), true; }, stats);
  CHECK(streamed == "The little");
  CHECK(s.messages().back().text == "The little");
  CHECK(stats.stop_reason == engine::StopReason::stop_string);
}

TEST_CASE("continued reply tokens are the greedy choices of the all-at-once logits") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  engine::Session s(engine, session_options("", "raw"));
  s.add_exchange("Once upon a time,", "there was a little");  // a written reply goes on too
  const size_t written = s.tokens().size();
  engine::TurnStats stats;
  const std::string streamed = continue_reply(s, greedy(20), stats);
  CHECK(s.messages().back().text == "there was a little" + streamed);
  CHECK(streamed.starts_with(" "));  // in the middle of a reply, a word keeps its space
  const auto logits = ModelRunner(gguf.string()).logits(s.tokens(), kv::KvType::f32);
  const size_t vocab = logits.size() / s.tokens().size();
  for (size_t p = written; p < s.tokens().size(); ++p) {
    CHECK(is_greedy_choice(logits, vocab, s.tokens(), p));
  }
}

TEST_CASE("a rewound reply continued is generated anew: the same one with the same seed") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  engine::Session s(engine, session_options("You tell stories.", "llama2"));
  greedy_turn(s, "Tell me a story.", 10);
  engine::GenerateParams sampled;
  sampled.seed = 1234;
  sampled.max_tokens = 30;
  sampled.ignore_eos = true;
  engine::TurnStats stats;
  s.send("What happened next?", sampled, nullptr, stats);
  const auto tokens = s.tokens();
  const auto reply = s.messages().back();

  s.rewind(1);
  const size_t after_rewind = s.tokens().size();
  CHECK(s.messages().back().role == engine::Role::user);
  const std::string streamed = continue_reply(s, sampled, stats);
  CHECK(streamed == reply.text);
  CHECK(s.tokens() == tokens);
  REQUIRE(s.messages().size() == 5);
  CHECK(s.messages().back().role == engine::Role::assistant);
  CHECK(s.messages().back().text == reply.text);
  CHECK(s.messages().back().token_begin == reply.token_begin);
  CHECK(stats.computed_tokens == 1);  // the rewind kept the KV; the logits are recomputed
  CHECK(stats.reused_tokens == after_rewind - 1);

  // A reply prefix starts a reply not yet under way.
  s.rewind(1);
  engine::GenerateParams prefixed = greedy(8);
  prefixed.reply_prefix = "The end";
  continue_reply(s, prefixed, stats);
  CHECK(s.messages().back().text.starts_with("The end"));
  CHECK(s.messages().size() == 5);
}

TEST_CASE("continuing is refused when there is nothing to go on from; nothing changes") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session empty(engine, session_options("a b c", "llama2"));
  CHECK(status_of_continue(empty, greedy(4)) == Status::invalid_argument);
  CHECK(empty.messages().size() == 1);
  CHECK(empty.tokens().empty());

}

// A reply cut inside a word or before a comma, continued with the text the model would have
// written next as a prefix, then greedily: one longer reply, token for token. The prefix's
// ids are those the model gave, not the text encoded on its own (which starts a word).
TEST_CASE("a reply prefix steers a reply under way: it continues the reply's text") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  int steered = 0;
  for (const char* name : {"raw", "llama2", "chatml"}) {
    CAPTURE(std::string(name));
    engine::Session whole(engine, session_options("", name, std::string("whole-") + name));
    greedy_turn(whole, "Once upon a time", 40);
    const auto& reply = whole.messages().back();
    const std::vector<int32_t> ids(whole.tokens().begin() + reply.token_begin,
                                   whole.tokens().end());
    // The cut: the first piece past the third that does not start a word; the prefix runs
    // from there to a word's start at least three pieces on.
    const auto starts_word = [&](size_t i) { return tok.piece_bytes(ids[i]).starts_with(' '); };
    size_t cut = 3;
    while (cut < ids.size() && starts_word(cut)) ++cut;
    size_t m = cut + 3;
    while (m < ids.size() && !starts_word(m)) ++m;
    REQUIRE(m + 4 < ids.size());
    std::string prefix;
    for (size_t i = cut; i < m; ++i) prefix += tok.piece_bytes(ids[i]);
    CAPTURE(prefix);
    if (tok.encode_continuation(prefix) !=
        std::vector<int32_t>(ids.begin() + std::ptrdiff_t(cut), ids.begin() + std::ptrdiff_t(m))) {
      continue;  // the model wrote it in pieces the tokenizer would not choose
    }
    ++steered;

    engine::Session s(engine, session_options("", name, std::string("cut-") + name));
    greedy_turn(s, "Once upon a time", uint32_t(cut));
    engine::GenerateParams prefixed = greedy(uint32_t(ids.size() - m));
    prefixed.reply_prefix = prefix;
    engine::TurnStats stats;
    const std::string streamed = continue_reply(s, prefixed, stats);
    CHECK(streamed.starts_with(prefix));
    CHECK(s.tokens() == whole.tokens());
    CHECK(s.messages().back().text == reply.text);
    CHECK(s.messages().size() == whole.messages().size());
  }
  CHECK(steered >= 2);
}

TEST_CASE("a reply the model ended with its end token is complete: not continued") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  engine::Session s(engine, session_options("", "raw"));
  engine::GenerateParams until_end = greedy(400);
  until_end.ignore_eos = false;  // a story ends with BOS, the raw template's end token here
  engine::TurnStats stats;
  s.send("Once upon a time", until_end, nullptr, stats);
  REQUIRE(stats.stop_reason == engine::StopReason::end_token);
  CHECK(s.messages().back().closed);
  const auto tokens = s.tokens();
  CHECK(status_of_continue(s, greedy(4)) == Status::invalid_argument);
  CHECK(s.tokens() == tokens);
  s.rewind(1);  // ... but generated anew after a rewind
  continue_reply(s, until_end, stats);
  CHECK(s.tokens() == tokens);
}

TEST_CASE("continuing at the context's end: ERROR refuses, DROP_OLDEST keeps the message") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  const uint32_t context = engine->context_length();
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "a b", 4);
  engine::TurnStats stats;
  s.send("c d", greedy(0), nullptr, stats);
  REQUIRE(stats.stop_reason == engine::StopReason::context_end);
  REQUIRE(s.tokens().size() == context);
  const auto tokens = s.tokens();
  try {
    s.continue_reply(greedy(4), nullptr, stats);
    FAIL("the reply went on past the context");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    CHECK(std::string(e.what()).find("the reply needs at least 1 more tokens") !=
          std::string::npos);
  }
  CHECK(s.tokens() == tokens);

  auto o = session_options("", "raw");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session dropping(engine, o);
  greedy_turn(dropping, "a b", 4);
  greedy_turn(dropping, "c d", 4);
  dropping.send("e f", greedy(0), nullptr, stats);
  REQUIRE(dropping.tokens().size() == context);
  const std::string cut = dropping.messages().back().text;
  continue_reply(dropping, greedy(3), stats);
  CHECK(stats.kv_source == engine::KvSource::rebuilt);
  CHECK(stats.generated_tokens == 3);
  REQUIRE(dropping.messages().size() == 4);  // the oldest exchange went, enough for 3
  CHECK(dropping.messages()[0].text == "c d");
  CHECK(dropping.messages()[2].text == "e f");
  CHECK(dropping.messages()[3].text.starts_with(cut));
  CHECK(dropping.messages()[3].text.size() > cut.size());

  // A user message that alone leaves no room is never dropped: refused.
  engine::Session alone(engine, o);
  alone.send("g h", greedy(0), nullptr, stats);
  REQUIRE(alone.tokens().size() == context);
  const auto alone_tokens = alone.tokens();
  try {
    alone.continue_reply(greedy(4), nullptr, stats);
    FAIL("the reply went on past the context");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    CHECK(std::string(e.what()).find("even with every earlier exchange dropped") !=
          std::string::npos);
  }
  CHECK(alone.tokens() == alone_tokens);
  CHECK(alone.messages().size() == 2);
}

TEST_CASE("parley_session_continue: a stopped continuation keeps its part; the store keeps one "
          "turn, read back after a restart") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  const std::string model = gguf.string(), store = (dir / "store.db").string();
  parley_engine* e = open_engine_with_store(model, store);
  parley_session* s = create_raw_session(e, "story");
  parley_generate_options g = greedy_options(6);
  std::string streamed;
  REQUIRE(parley_session_send(s, "Once upon a time", &g, append_text, &streamed, nullptr) ==
          PARLEY_OK);
  // The callback stops the continuation after its first piece: kept, with stats.
  const auto stop_after_one = [](const char* utf8, size_t len, void* user) {
    static_cast<std::string*>(user)->append(utf8, len);
    return 1;
  };
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  CHECK(parley_session_continue(s, &g, stop_after_one, &streamed, &stats) == PARLEY_E_CANCELLED);
  CHECK(stats.stop_reason == PARLEY_STOP_CANCELLED);
  CHECK(stats.generated_tokens >= 1);
  CHECK(turn_text(s, 1) == streamed);
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);  // the next call restores the KV
  g.max_tokens = 10;
  REQUIRE(parley_session_continue(s, &g, append_text, &streamed, &stats) == PARLEY_OK);
  CHECK(stats.kv_source == PARLEY_KV_SOURCE_RESTORED);
  CHECK(turn_text(s, 1) == streamed);
  CHECK(session_info(s).n_turns == 2);
  const std::vector<int32_t> tokens = session_tokens(s);
  parley_session_close(s);
  parley_engine_close(e);

  e = open_engine_with_store(model, store);
  REQUIRE(parley_session_open(e, "story", &s) == PARLEY_OK);
  CHECK(session_info(s).n_turns == 2);
  CHECK(turn_text(s, 1) == streamed);
  CHECK(session_tokens(s) == tokens);
  // Rewound and generated again after the restart: committed in place of the old one.
  REQUIRE(parley_session_rewind(s, 1) == PARLEY_OK);
  g.max_tokens = 4;
  std::string again;
  REQUIRE(parley_session_continue(s, &g, append_text, &again, nullptr) == PARLEY_OK);
  CHECK(streamed.starts_with(again));
  parley_session_close(s);
  parley_engine_close(e);

  e = open_engine_with_store(model, store);
  REQUIRE(parley_session_open(e, "story", &s) == PARLEY_OK);
  CHECK(session_info(s).n_turns == 2);
  CHECK(turn_text(s, 1) == again);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a reply cut inside a character: continuing it finishes the character") {
  // "é" is two byte pieces here, C3 A9. Cut after the first, the reply ends with the U+FFFD
  // that stands for it; the next byte finishes the character, in the text as in the ids.
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  const auto byte_piece = [&](char byte) {
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      if (tok.piece_bytes(id) == std::string(1, byte)) return id;
    }
    FAIL("no byte piece");
    return -1;
  };
  const auto forced = [&](char byte) {
    engine::GenerateParams p = greedy(1);
    p.sampler.logit_bias = {{byte_piece(byte), 1000.0f}};
    return p;
  };
  const std::string fffd = "\xEF\xBF\xBD", e_acute = "\xC3\xA9";
  for (const char* chat_template : {"raw", "chatml"}) {
    CAPTURE(chat_template);
    engine::Session s(engine, session_options("", chat_template));
    engine::TurnStats stats;
    s.send("Once upon a time", forced('\xC3'), nullptr, stats);
    CHECK(s.messages().back().text == fffd);

    CHECK(continue_reply(s, forced('\xA9'), stats) == e_acute);
    CHECK(s.messages().back().text == e_acute);
    const auto& reply = s.messages().back();
    CHECK(tok.decode(std::span(s.tokens()).subspan(reply.token_begin, reply.n_tokens)) ==
          e_acute);

    // A byte that cannot go on from it leaves the U+FFFD, and the text after it.
    s.rewind(2);
    s.send("Once upon a time", forced('\xC3'), nullptr, stats);
    CHECK(continue_reply(s, forced('a'), stats) == fffd + "a");
    CHECK(s.messages().back().text == fffd + "a");
  }
}

// Written exchanges (Session::add_exchange, parley_session_add_exchange): a user message and a
// reply the caller wrote join the conversation as the template and the tokenizer render them,
// their KV is computed, and the model's next reply reads them as it reads its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "golden.h"
#include "model_runner.h"
#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

// Every reply token from position `from` on is the greedy choice of the all-at-once logits:
// the KV the turns left behind is the KV of the conversation's ids.
void check_replies_follow_all_at_once(const std::string& model, kv::KvType kv_type,
                                      const std::vector<int32_t>& ids, size_t from) {
  const auto logits = ModelRunner(model).logits(ids, kv_type);
  const size_t vocab = logits.size() / ids.size();
  for (size_t p = from; p < ids.size(); ++p) CHECK(is_greedy_choice(logits, vocab, ids, p));
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("a written exchange: the user turn's ids, the reply encoded, then replies as usual") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  for (auto kv_type : {kv::KvType::f32, kv::KvType::int8}) {
    CAPTURE(std::string(kv::kv_type_name(kv_type)));
    auto engine = open_engine(gguf.string(), kv_type);
    const auto& tok = engine->tokenizer();
    engine::Session s(engine, session_options());  // raw
    // A raw reply continues the text, as the model's own would: its space starts a word.
    const std::string reply = " there was a big red dog. He liked to run.";
    s.add_exchange("Once upon a time,", reply);
    const auto reply_ids = tok.encode("there was a big red dog. He liked to run.");
    const auto written = concat(concat({tok.bos_id()}, tok.encode("Once upon a time,")),
                                reply_ids);
    CHECK(s.tokens() == written);
    REQUIRE(s.messages().size() == 2);
    CHECK(s.messages()[0].role == engine::Role::user);
    CHECK(s.messages()[1].role == engine::Role::assistant);
    CHECK(s.messages()[1].text == reply);
    CHECK(s.messages()[1].n_tokens == reply_ids.size());
    CHECK(!s.messages()[1].closed);

    // The next turn computes its own message and the written reply's last token only.
    const auto stats = greedy_turn(s, "One day,", 24);
    CHECK(stats.reused_tokens == written.size() - 1);
    CHECK(stats.computed_tokens == tok.encode("One day,").size() + 1);
    check_replies_follow_all_at_once(gguf.string(), kv_type, s.tokens(), s.tokens().size() - 24);
  }
}

TEST_CASE("a written reply is closed by the next turn as the template closes a reply") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  for (const char* chat_template : {"llama2", "chatml", "zephyr"}) {
    CAPTURE(chat_template);
    engine::Session written(engine, session_options("You tell stories.", chat_template));
    written.add_exchange("Tell me a story.", "Once upon a time, there was a cat.");
    const size_t after_reply = written.tokens().size();
    greedy_turn(written, "What was its name?", 16);
    // The same conversation sent as a generated reply cut at max_tokens would be: the reply's
    // ids, then the template's close (rendered by the next turn).
    engine::Session generated(engine, session_options("You tell stories.", chat_template));
    greedy_turn(generated, "Tell me a story.", 1);
    const size_t prompt = generated.tokens().size() - 1;
    CHECK(std::equal(written.tokens().begin(), written.tokens().begin() + long(prompt),
                     generated.tokens().begin()));
    const std::vector<int32_t> reply_ids(written.tokens().begin() + long(prompt),
                                         written.tokens().begin() + long(after_reply));
    CHECK(tok.decode(reply_ids) == "Once upon a time, there was a cat.");
    if (std::string(chat_template) != "chatml") {  // EOS closes llama2's and zephyr's replies
      CHECK(written.tokens()[after_reply] == tok.eos_id());  // (this tokenizer drops a last space)
    }
    check_replies_follow_all_at_once(gguf.string(), kv::KvType::f32, written.tokens(),
                                     written.tokens().size() - 16);
  }
}

TEST_CASE("written exchanges: rewind removes them; ERROR refuses what does not fit; "
          "DROP_OLDEST makes room") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("a b c", "raw"));
  greedy_turn(s, "d e", 6);
  const auto before = s.tokens();
  s.add_exchange("f g", "h i j");
  CHECK(s.messages().size() == 5);
  s.rewind(2);
  CHECK(s.tokens() == before);
  CHECK(s.messages().size() == 3);

  std::string long_reply;
  for (int i = 0; i < 200; ++i) long_reply += "x ";
  try {
    s.add_exchange("k", long_reply);
    FAIL("the exchange was taken");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    CHECK(std::string(e.what()).find("tokens and its reply ") != std::string::npos);
  }
  CHECK(s.tokens() == before);
  CHECK(s.messages().size() == 3);

  auto o = session_options("a b c", "raw");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session dropping(engine, o);
  for (int i = 0; i < 30; ++i) dropping.add_exchange("l m n o", "p q r s t u");
  CHECK(dropping.tokens().size() <= 128);  // (the synthetic model's context)
  CHECK(dropping.messages().front().text == "a b c");
  CHECK(dropping.messages().back().text == "p q r s t u");
  CHECK(dropping.messages().size() < 1 + 2 * 30);
  CHECK(greedy_turn(dropping, "v", 1).generated_tokens == 1);
}

TEST_CASE("parley_session_add_exchange: committed to the store, read back after a restart") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  const std::string model = gguf.string(), store = (dir / "store.db").string();
  const parley_generate_options g = greedy_options(12);
  parley_engine* e = open_engine_with_store(model, store);
  parley_session* s = create_raw_session(e, "scripted");
  REQUIRE(parley_session_add_exchange(s, "Once upon a time", "there was a fox.") == PARLEY_OK);
  CHECK(parley_session_add_exchange(s, nullptr, "x") == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_add_exchange(s, "x", nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_add_exchange(s, "x", "bad \xC0\xAF") == PARLEY_E_INVALID_ARGUMENT);
  const std::vector<int32_t> written = session_tokens(s);
  parley_session_close(s);
  parley_engine_close(e);

  e = open_engine_with_store(model, store);
  REQUIRE(parley_session_open(e, "scripted", &s) == PARLEY_OK);
  parley_turn t{};
  t.struct_size = sizeof t;
  REQUIRE(parley_session_get_turn(s, 1, &t) == PARLEY_OK);
  CHECK(std::string(t.text) == "there was a fox.");
  CHECK(t.role == PARLEY_ROLE_ASSISTANT);
  CHECK(session_tokens(s) == written);
  REQUIRE(parley_session_send(s, " The fox", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  const std::vector<int32_t> resumed = session_tokens(s);
  parley_session_close(s);
  parley_engine_close(e);

  // The same turns in an engine that never restarted.
  e = open_engine(model, PARLEY_KV_DEFAULT);
  s = create_raw_session(e, "again");
  REQUIRE(parley_session_add_exchange(s, "Once upon a time", "there was a fox.") == PARLEY_OK);
  REQUIRE(parley_session_send(s, " The fox", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(session_tokens(s) == resumed);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a reply prefix starts the reply; the model goes on from it as from its own tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  int stopped = 0;
  for (const char* chat_template : {"raw", "llama2"}) {
    CAPTURE(chat_template);
    engine::Session s(engine, session_options("", chat_template));
    engine::GenerateParams params;
    params.sampler.temperature = 0;
    params.max_tokens = 20;
    params.ignore_eos = true;
    // A raw reply continues the message: its space keeps "The" a word of its own.
    const bool raw = std::string(chat_template) == "raw";
    params.reply_prefix = raw ? " The little dog" : "The little dog";
    params.stop_strings = text::StopStrings({"little", "very"});  // only past the prefix
    std::string streamed;
    engine::TurnStats stats;
    s.send("Once upon a time", params,
           [&](std::string_view piece) { return streamed.append(piece), true; }, stats);
    const auto& reply = s.messages().back();
    CHECK(reply.text.starts_with(params.reply_prefix));
    CHECK(streamed == reply.text);
    CHECK(reply.text.find("very") == std::string::npos);
    const auto prefix_ids = tok.encode("The little dog");
    CHECK(reply.n_tokens >= prefix_ids.size());
    CHECK(std::equal(prefix_ids.begin(), prefix_ids.end(),
                     s.tokens().begin() + reply.token_begin));
    // The reply reads as sentencepiece decodes its ids as one text (no space dropped after the
    // prefix; a raw reply keeps the space a text's start loses), also when a stop string began
    // inside a token: that token gave way to the ids of its part before it.
    const std::span<const int32_t> reply_ids(s.tokens().data() + reply.token_begin,
                                             reply.n_tokens);
    CHECK((raw ? " " : "") + tok.decode(reply_ids) == reply.text);
    std::vector<int32_t> chosen = s.tokens();  // the ids the model chose
    if (stats.stop_reason == engine::StopReason::stop_string) {
      ++stopped;
      CHECK(stats.stop_index == 1);
      // Up to where the reply without stop strings, which shows "very", goes another way.
      engine::Session uncut(engine, session_options("", chat_template));
      params.stop_strings = text::StopStrings();
      uncut.send("Once upon a time", params, nullptr, stats);
      REQUIRE(uncut.messages().back().text.find("very") != std::string::npos);
      chosen.resize(size_t(std::mismatch(chosen.begin(), chosen.end(), uncut.tokens().begin(),
                                         uncut.tokens().end()).first - chosen.begin()));
    }
    const size_t generated_from = reply.token_begin + prefix_ids.size();
    check_replies_follow_all_at_once(gguf.string(), kv::KvType::f32, chosen, generated_from);
  }
  CHECK(stopped >= 1);  // (the raw reply of this model shows "very" within 20 tokens)
}

TEST_CASE("a reply prefix or a written reply ending with a space: its ids keep the space") {
  // This model's tokenizer drops the whitespace a text ends with: the ids would say less than
  // the text, and the reply read on from them would show two spaces where the ids have one.
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  const auto reply_ids = [](const engine::Session& s) {
    const auto& reply = s.messages().back();
    return std::vector<int32_t>(s.tokens().begin() + reply.token_begin,
                                s.tokens().begin() + reply.token_begin + reply.n_tokens);
  };
  for (const char* chat_template : {"raw", "mistral"}) {
    CAPTURE(chat_template);
    const bool raw = std::string(chat_template) == "raw";
    engine::Session s(engine, session_options("", chat_template));
    engine::GenerateParams params;
    params.sampler.temperature = 0;
    params.max_tokens = 8;
    params.reply_prefix = raw ? " *nods* " : "*nods* ";
    engine::TurnStats stats;
    s.send("Once upon a time", params, nullptr, stats);
    CHECK(s.messages().back().text.starts_with(params.reply_prefix));
    CHECK((raw ? " " : "") + tok.decode(reply_ids(s)) == s.messages().back().text);

    params.reply_prefix = " ";  // more of the same reply, after a space
    s.continue_reply(params, nullptr, stats);
    CHECK((raw ? " " : "") + tok.decode(reply_ids(s)) == s.messages().back().text);

    s.add_exchange("And then?", "She smiled. ");
    CHECK(tok.decode(reply_ids(s)) == "She smiled. ");
  }
  // Llama 2's template strips a written reply, its last spaces too.
  engine::Session stripped(engine, session_options("", "llama2"));
  stripped.add_exchange("And then?", "She smiled. ");
  CHECK(tok.decode(reply_ids(stripped)) == "She smiled.");
}

TEST_CASE("raw after BOS alone: the streamed reply written back, scored or as a prefix, is the "
          "model's ids") {
  // An empty first message is BOS alone: the reply starts a text, and streamed, its first word
  // shows without the space its piece has, as sentencepiece decodes a text.
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const auto goldens = read_greedy_goldens(goldens_path);
  const auto golden = std::find_if(goldens.begin(), goldens.end(),
                                   [](const GreedyGolden& g) { return g.name == "empty"; });
  REQUIRE(golden != goldens.end());
  REQUIRE(golden->prompt_ids.size() == 1);
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  const size_t n = 12;
  REQUIRE(golden->generated_ids.size() >= n);
  const std::vector<int32_t> expected = concat(
      golden->prompt_ids, std::vector<int32_t>(golden->generated_ids.begin(),
                                               golden->generated_ids.begin() + std::ptrdiff_t(n)));
  const std::string reply = tok.decode(std::span(expected).subspan(1));

  engine::GenerateParams params;
  params.sampler.temperature = 0;
  params.max_tokens = uint32_t(n);
  std::string streamed;
  engine::TurnStats stats;
  engine::Session generated(engine, session_options());
  generated.send("", params, [&](std::string_view piece) { return streamed.append(piece), true; },
                 stats);
  CHECK(generated.tokens() == expected);
  CHECK(streamed == reply);

  engine::Session written(engine, session_options());
  written.add_exchange("", reply);
  CHECK(written.tokens() == expected);

  engine::Session scored(engine, session_options());
  const auto use = scored.try_use();
  REQUIRE(use);
  const std::string_view replies[] = {reply};
  const auto scores = scored.score_replies("", replies, false);
  REQUIRE(scores.size() == 1);
  CHECK(scores[0].n_tokens == n);
  const auto logits = ModelRunner(gguf.string()).logits(expected, kv::KvType::f32);
  const size_t vocab = logits.size() / expected.size();
  double logprob = 0;
  for (size_t p = 0; p + 1 < expected.size(); ++p) {
    logprob += log_p(logits, vocab, p, expected[p + 1]);
  }
  CHECK(scores[0].logprob == doctest::Approx(logprob).epsilon(1e-4));

  engine::Session prefixed(engine, session_options());
  params.reply_prefix = tok.decode(std::span(expected).subspan(1, 2));  // "Once upon"
  params.max_tokens = uint32_t(n - 2);
  prefixed.send("", params, nullptr, stats);
  CHECK(prefixed.tokens() == expected);
  CHECK(prefixed.messages().back().text == reply);
}

TEST_CASE("a written reply far longer than the context: CONTEXT_FULL from its first words") {
  // As a message is: tokenizing megabytes would take seconds, and memory, for that answer.
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  std::string story;
  while (story.size() < 1000000) story += "Once upon a time, there was a little girl. ";
  for (const char* chat_template : {"raw", "chatml"}) {
    CAPTURE(chat_template);
    engine::Session s(engine, session_options("", chat_template));
    s.add_exchange("Hello", " there.");
    const auto before = s.tokens();
    try {
      s.add_exchange("Tell me a story.", story);
      FAIL("added");
    } catch (const Error& e) {
      CHECK(e.status() == Status::context_full);
      const std::string why = e.what();
      CAPTURE(why);
      CHECK(why.starts_with("the reply needs more than "));
      CHECK(why.find("its first") != std::string::npos);
    }
    CHECK(s.tokens() == before);
    CHECK(s.messages().size() == 2);
  }
}

// Session::score_replies: the log-probability of candidate replies, checked against the
// independent reference's logits (run.c's, in ../shared/golden) and against the model run
// directly over the tokens the same exchange takes in a conversation; the conversation is left
// as it was, spilled KV comes back for it, and an interrupt stops it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "golden.h"
#include "model_runner.h"
#include "session_fixture.h"
#include "support/error_check.h"
#include "support/shared_assets.h"
#include "text/tokenizer.h"

using namespace parley;
using namespace parley::test;

namespace {

std::vector<engine::Session::ReplyScore> score(engine::Session& s, const std::string& message,
                                               const std::vector<std::string_view>& replies,
                                               bool with_end) {
  const auto use = s.try_use();
  REQUIRE(use);
  return s.score_replies(message, replies, with_end);
}


}  // namespace

TEST_CASE("a reply's score is its log-probability under the reference's logits") {
  PARLEY_SHARED_OR_SKIP(golden_dir, "golden");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const auto golden = read_logits_golden(golden_dir, "once_upon");
  // The message is the reference's first tokens, BOS "Once upon a time,"; the replies are the
  // words that follow in its trajectory, written as the raw template streams them (" there
  // was": the space starts the word).
  const std::string message = "Once upon a time,";
  const std::vector<int32_t> prompt(golden.token_ids.begin(), golden.token_ids.begin() + 6);
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  REQUIRE(engine->tokenizer().encode(message) ==
          std::vector<int32_t>(prompt.begin() + 1, prompt.end()));

  for (const size_t length : {1, 8, 30}) {
    CAPTURE(length);
    const std::vector<int32_t> reply_ids(golden.token_ids.begin() + 6,
                                         golden.token_ids.begin() + 6 + std::ptrdiff_t(length));
    std::string reply;
    for (int32_t id : reply_ids) reply += engine->tokenizer().piece_bytes(id);
    // The reply as the conversation would hold it: the same ids as the reference's.
    {
      engine::Session written(engine, session_options("", "raw", "written"));
      const auto use = written.try_use();
      written.add_exchange(message, reply);
      std::vector<int32_t> expected_ids = prompt;
      expected_ids.insert(expected_ids.end(), reply_ids.begin(), reply_ids.end());
      REQUIRE(written.tokens() == expected_ids);
    }
    // Row p of the reference's logits follows token p: it scores token p + 1.
    double expected = 0;
    for (size_t i = 0; i < length; ++i) {
      expected += log_p(golden.logits, golden.n_vocab, 5 + i, reply_ids[i]);
    }
    // A raw text ends with EOS or BOS (the next document's): either ends the reply.
    const double end = std::log(std::exp(log_p(golden.logits, golden.n_vocab, 5 + length, 2)) +
                                std::exp(log_p(golden.logits, golden.n_vocab, 5 + length, 1)));

    engine::Session s(engine, session_options("", "raw"));
    const auto scores = score(s, message, {reply}, false);
    REQUIRE(scores.size() == 1);
    CHECK(scores[0].n_tokens == length);
    CHECK(std::fabs(scores[0].logprob - expected) <= 2e-4 * double(length));
    const auto ended = score(s, message, {reply}, true);
    CHECK(ended[0].n_tokens == length + 1);
    CHECK(std::fabs(ended[0].logprob - (expected + end)) <= 2e-4 * double(length + 1));
    CHECK(s.tokens().empty());  // nothing was added
  }
}

TEST_CASE("a raw reply that starts with a comma joins the message's last word") {
  PARLEY_SHARED_OR_SKIP(golden_dir, "golden");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const auto golden = read_logits_golden(golden_dir, "once_upon");
  // BOS "Once upon a time" and then the reference's ", there was ...": the comma is the
  // piece "," after "time", not a space and a comma.
  const std::string message = "Once upon a time";
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  REQUIRE(tok.encode(message) ==
          std::vector<int32_t>(golden.token_ids.begin() + 1, golden.token_ids.begin() + 5));
  const std::vector<int32_t> reply_ids(golden.token_ids.begin() + 5,
                                       golden.token_ids.begin() + 12);
  std::string reply;
  for (int32_t id : reply_ids) reply += tok.piece_bytes(id);
  REQUIRE(reply.starts_with(","));

  engine::Session written(engine, session_options("", "raw", "written"));
  {
    const auto use = written.try_use();
    written.add_exchange(message, reply);
  }
  CHECK(written.tokens() == std::vector<int32_t>(golden.token_ids.begin(),
                                                  golden.token_ids.begin() + 12));
  double expected = 0;
  for (size_t i = 0; i < reply_ids.size(); ++i) {
    expected += log_p(golden.logits, golden.n_vocab, 4 + i, reply_ids[i]);
  }
  engine::Session s(engine, session_options("", "raw"));
  const auto scores = score(s, message, {reply}, false);
  CHECK(scores[0].n_tokens == reply_ids.size());
  CHECK(std::fabs(scores[0].logprob - expected) <= 2e-4 * double(reply_ids.size()));
}

TEST_CASE("scores later in a conversation equal the model run over the same tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  ModelRunner runner(gguf.string());
  const size_t n_vocab = size_t(runner.config().n_vocab);
  const std::vector<std::string_view> replies = {"She was happy.", "The dog ran away.", ""};
  for (const char* name : {"llama2", "chatml", "raw"}) {
    CAPTURE(name);
    engine::Session s(engine, session_options("You tell stories.", name));
    greedy_turn(s, "Tell me about Lily.", 10);
    const std::vector<int32_t> tokens_before = s.tokens();
    const size_t messages_before = s.messages().size();
    const auto scores = score(s, "What next?", replies, true);
    const auto alone = score(s, "What next?", {replies[1]}, true);
    CHECK(s.tokens() == tokens_before);
    CHECK(s.messages().size() == messages_before);
    CHECK(alone[0].logprob == scores[1].logprob);  // each reply is scored on its own

    for (size_t r = 0; r < replies.size(); ++r) {
      CAPTURE(r);
      // The same exchange added to a copy: its tokens, the model run over them directly.
      auto copy = s.fork("copy-" + std::string(name) + std::to_string(r));
      std::vector<int32_t> ids;
      uint32_t reply_tokens = 0;
      size_t reply_end = 0;
      {
        const auto use = copy->try_use();
        copy->add_exchange("What next?", replies[r]);
        reply_tokens = copy->messages().back().n_tokens;
        reply_end = copy->tokens().size();
        copy->add_exchange("", "");  // its turn begins with what closes the reply
        ids = copy->tokens();
      }
      const size_t reply_begin = reply_end - reply_tokens;
      const size_t n_end = scores[r].n_tokens - reply_tokens;
      const bool raw = std::string(name) == "raw";
      // Nothing closes a raw reply: EOS or BOS ends it, scored below. Where the vocabulary
      // has no <|im_end|> token, the model ends a chatml reply as it can: with EOS.
      const bool no_marker = std::string(name) == "chatml" &&
                             !engine->tokenizer().find_special("<|im_end|>");
      if (raw || no_marker) {
        REQUIRE(n_end == 1);
        ids.resize(reply_end);
        ids.push_back(engine->tokenizer().eos_id());
      } else {
        REQUIRE(n_end >= 1);
        ids.resize(reply_end + n_end);
      }
      const auto logits = runner.logits(ids, kv::KvType::f32);
      double expected = 0;
      for (size_t p = reply_begin; p < ids.size(); ++p) {
        if (raw && p + 1 == ids.size()) {
          expected += std::log(std::exp(log_p(logits, n_vocab, p - 1, ids[p])) +
                               std::exp(log_p(logits, n_vocab, p - 1, 1)));  // BOS
          continue;
        }
        expected += log_p(logits, n_vocab, p - 1, ids[p]);
      }
      CHECK(std::fabs(scores[r].logprob - expected) <= 1e-4 * double(scores[r].n_tokens));
      CHECK(scores[r].logprob <= 0);
    }
  }
}

// Continuations of an open reply (cut inside a word): each text's score is the log-probability
// the model run over the whole reply gives its ids; a missing reply scores as a reply to its
// message does.
TEST_CASE("continuations score as the model run over the reply they continue") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const auto& tok = engine->tokenizer();
  ModelRunner runner(gguf.string());
  const size_t n_vocab = size_t(runner.config().n_vocab);
  for (const char* name : {"raw", "llama2"}) {
    CAPTURE(std::string(name));
    engine::Session whole(engine, session_options("", name, std::string("whole-") + name));
    greedy_turn(whole, "Once upon a time", 24);
    const auto& ids = whole.tokens();
    const size_t begin = whole.messages().back().token_begin;
    const auto logits = runner.logits(ids, kv::KvType::f32);
    // The cut: the first reply piece past the second that does not start a word. The texts:
    // the pieces from there up to a word's start, as streamed.
    const auto starts_word = [&](size_t p) { return tok.piece_bytes(ids[p]).starts_with(' '); };
    size_t cut = begin + 2;
    while (cut < ids.size() && starts_word(cut)) ++cut;
    std::vector<std::string> texts;
    std::vector<double> expected;
    std::string text;
    double sum = 0;
    for (size_t p = cut; p + 1 < ids.size() && texts.size() < 3; ++p) {
      text += tok.piece_bytes(ids[p]);
      sum += log_p(logits, n_vocab, p - 1, ids[p]);
      const std::vector<int32_t> expected_ids(ids.begin() + std::ptrdiff_t(cut),
                                              ids.begin() + std::ptrdiff_t(p + 1));
      // (Skipped: pieces the tokenizer would not choose for the text.)
      if (starts_word(p + 1) && tok.encode_continuation(text) == expected_ids) {
        texts.push_back(text);
        expected.push_back(sum);
      }
    }
    REQUIRE(texts.size() >= 2);
    engine::Session s(engine, session_options("", name, std::string("cut-") + name));
    greedy_turn(s, "Once upon a time", uint32_t(cut - begin));
    const std::vector<std::string_view> views(texts.begin(), texts.end());
    std::vector<engine::Session::ReplyScore> scores;
    {
      const auto use = s.try_use();
      scores = s.score_continuations(views, false);
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      CAPTURE(texts[i]);
      CHECK(std::fabs(scores[i].logprob - expected[i]) <= 1e-4 * double(scores[i].n_tokens));
    }

    // Without its reply, the message's continuations are replies to it.
    engine::Session before(engine, session_options("", name, std::string("before-") + name));
    const std::vector<std::string_view> replies = {"Lily was happy.", "A cat sat."};
    const auto as_replies = score(before, "Once upon a time", replies, true);
    s.rewind(1);
    const auto use = s.try_use();
    const auto as_continuations = s.score_continuations(replies, true);
    for (size_t i = 0; i < replies.size(); ++i) {
      CHECK(as_continuations[i].n_tokens == as_replies[i].n_tokens);
      CHECK(as_continuations[i].logprob == doctest::Approx(as_replies[i].logprob).epsilon(1e-9));
    }
  }
}

TEST_CASE("continuations need something to go on from; nothing changes") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session empty(engine, session_options("a b", "llama2"));
  const std::vector<std::string_view> texts = {"c"};
  CHECK_PARLEY_ERROR(empty.score_continuations(texts, false), Status::invalid_argument,
                     "no message to reply to");
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "a b", 4);
  const auto ids = s.tokens();
  CHECK(s.score_continuations(texts, true)[0].logprob < 0);
  CHECK(s.tokens() == ids);
}

TEST_CASE("scoring leaves the conversation as it was; spilled KV comes back for it") {
  const TempDir dir;
  auto engine =
      open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {(dir / "s.db").string()});
  engine::Session scored(engine, session_options("", "raw", "a"));
  engine::Session twin(engine, session_options("", "raw", "b"));
  for (auto* s : {&scored, &twin}) greedy_turn(*s, "a b c d e f g h i j k l m n o p q r", 20);
  {
    const auto use = scored.try_use();
    REQUIRE(scored.spill());
  }
  const std::vector<std::string_view> replies = {"p q r", "s", "t u v w x y z"};
  const auto a = score(scored, "x y", replies, true);
  const auto b = score(twin, "x y", replies, false);
  CHECK_FALSE(scored.spilled());
  REQUIRE(a.size() == 3);
  for (size_t r = 0; r < replies.size(); ++r) {
    CAPTURE(r);
    CHECK(a[r].n_tokens == b[r].n_tokens + 1);
    CHECK(a[r].logprob < b[r].logprob);  // the end has a probability below 1 too
  }
  // Restored bit for bit: the same scores as the conversation that never left memory.
  const auto again = score(twin, "x y", replies, true);
  for (size_t r = 0; r < replies.size(); ++r) CHECK(again[r].logprob == a[r].logprob);

  const auto x = greedy_turn(scored, "x y", 12);
  const auto y = greedy_turn(twin, "x y", 12);
  CHECK(x.computed_tokens == y.computed_tokens);
  CHECK(scored.tokens() == twin.tokens());
  const auto lx = scored.last_logits();
  const auto ly = twin.last_logits();
  CHECK(std::equal(lx.begin(), lx.end(), ly.begin(), ly.end()));
}

TEST_CASE("scoring refuses a reply beyond the context and invalid UTF-8, naming the reply") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("", "raw"));
  std::string long_reply;
  for (int i = 0; i < 200; ++i) long_reply += "a b ";
  engine::Session::Use use = s.try_use();
  CHECK_PARLEY_ERROR(s.score_replies("x", std::vector<std::string_view>{"a", long_reply}, false),
                     Status::context_full, "reply 1");
  CHECK_PARLEY_ERROR(
      s.score_replies("x", std::vector<std::string_view>{"\xC0\xAF", "a"}, false),
      Status::invalid_argument, "reply 0", "UTF-8");
  CHECK_PARLEY_ERROR(s.score_replies("\xC0\xAF", std::vector<std::string_view>{"a"}, false),
                     Status::invalid_argument, "user text");
  CHECK(s.tokens().empty());
  CHECK(s.score_replies("x", std::vector<std::string_view>{"a"}, false).size() == 1);
}

TEST_CASE("a continuation beyond the context is refused in words that count its tokens") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "a b", 0);  // to the end of the context
  REQUIRE(s.tokens().size() == engine->context_length());
  const std::vector<std::string_view> one_token = {"c"};
  CHECK_PARLEY_ERROR(s.score_continuations(one_token, false), Status::context_full,
                     "reply 0 (1 token) does not fit in the 0 tokens the context has left");
  const std::vector<std::string_view> two_tokens = {"c", "c d"};
  CHECK_PARLEY_ERROR(s.score_continuations(two_tokens, true), Status::context_full,
                     "reply 0 (", " tokens) does not fit");
  const auto use = s.try_use();
  CHECK_PARLEY_ERROR(s.score_replies("x", one_token, false), Status::context_full,
                     "the message (", " tokens) and reply 0 (", ") do not fit");
}

TEST_CASE("interrupt() stops scoring between chunks; the conversation is as it was") {
  auto engine = open_long_context_engine();
  engine::Session s(engine, session_options("", "raw"));
  greedy_turn(s, "a b", 4);
  const auto before = s.tokens();
  std::string message;
  for (int i = 0; i < 500; ++i) message += "a b c ";

  const Status status = run_while_stopping(
      s, [&] { s.score_replies(message, std::vector<std::string_view>{"d"}, false); });
  CHECK(status == Status::cancelled);
  CHECK(s.tokens() == before);
  CHECK(engine->stats().blocks.used == s.kv_bytes_resident() /
                                           engine->kv_pool().layout().block_bytes());
}

// The budget is six blocks: the scored conversation's two (the second partly filled) and one
// of each of four idle sessions. The copies of that partly filled block scoring makes (one for
// the message, one for each reply) take blocks that idle sessions give up, as a send's do.
TEST_CASE("scoring under a full budget spills idle sessions for its copies of the last block") {
  const std::string turn = "a b c d e f g h i j k l m n o";
  const std::vector<std::string_view> replies = {"p q r", "s", "t u v"};
  auto roomy = open_engine(small_synthetic_model(), kv::KvType::int8);
  const uint64_t block_bytes = roomy->kv_pool().layout().block_bytes();
  engine::Session reference(roomy, session_options("", "raw"));
  greedy_turn(reference, turn, 4);
  const auto expected = score(reference, "x y", replies, true);

  const TempDir dir;
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string()}, 6 * block_bytes);
  REQUIRE(engine->kv_pool().capacity_blocks() == 6);
  engine::Session scored(engine, session_options("", "raw"));
  greedy_turn(scored, turn, 4);
  REQUIRE(scored.tokens() == reference.tokens());
  REQUIRE(scored.kv_bytes_resident() == 2 * block_bytes);
  // The message (two tokens) ends in the partly filled block, where every reply goes on.
  REQUIRE(scored.tokens().size() % kv::kBlockTokens > 2);
  std::vector<std::unique_ptr<engine::Session>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<engine::Session>(engine, session_options("", "raw")));
    greedy_turn(*idle.back(), "a b", 2);
  }
  REQUIRE_FALSE(engine->kv_pool().can_allocate(1));

  const auto scores = score(scored, "x y", replies, true);
  REQUIRE(scores.size() == replies.size());
  for (size_t r = 0; r < replies.size(); ++r) {
    CAPTURE(r);
    CHECK(scores[r].n_tokens == expected[r].n_tokens);
    CHECK(scores[r].logprob == expected[r].logprob);
  }
  const auto n_spilled = std::count_if(idle.begin(), idle.end(),
                                       [](const auto& s) { return s->spilled(); });
  CHECK(n_spilled >= 2);  // the message's copy and a reply's
  CHECK(scored.tokens() == reference.tokens());
}

// Without a block besides the conversation's own, there is nothing to spill: the budget is
// exhausted, and the message says so.
TEST_CASE("scoring a conversation that fills the budget alone is refused for memory") {
  const TempDir dir;
  auto roomy = open_engine(small_synthetic_model(), kv::KvType::int8);
  const uint64_t block_bytes = roomy->kv_pool().layout().block_bytes();
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string()}, 2 * block_bytes);
  engine::Session scored(engine, session_options("", "raw"));
  greedy_turn(scored, "a b c d e f g h i j k l m n o", 4);
  REQUIRE(scored.kv_bytes_resident() == 2 * block_bytes);
  const auto use = scored.try_use();
  CHECK_PARLEY_ERROR(scored.score_replies("x y", std::vector<std::string_view>{"s"}, false),
                     Status::out_of_memory, "every block holds KV of an open session");
  CHECK(scored.kv_bytes_resident() == 2 * block_bytes);
}

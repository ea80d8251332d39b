// Fork equals an independent copy; rewind then resend equals the original; the overflow
// policies: refuse, or drop the oldest exchanges (keeping the system prompt) and rebuild.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

TEST_CASE("a fork equals an independent copy, and the two go their own ways") {
  for (auto type : {kv::KvType::int8, kv::KvType::f32}) {
    CAPTURE(std::string(kv::kv_type_name(type)));
    auto engine = open_engine(small_synthetic_model(), type);
    engine::Session original(engine, session_options("a b c d e f g", "mistral"));
    greedy_turn(original, "h i j k", 13);  // the last block is partly filled
    greedy_turn(original, "l m", 9);
    auto fork = original.fork("copy");
    CHECK(fork->id() == "copy");
    CHECK(fork->tokens() == original.tokens());
    CHECK(fork->messages().size() == original.messages().size());

    // The original moves on; the fork must not notice.
    greedy_turn(original, "n o p", 20);
    original.rewind(4);  // back into the blocks the fork shares, then written again
    greedy_turn(original, "q", 30);

    // The fork continues exactly like a session that replayed the same turns from scratch.
    engine::Session replay(engine, session_options("a b c d e f g", "mistral"));
    greedy_turn(replay, "h i j k", 13);
    greedy_turn(replay, "l m", 9);
    greedy_turn(replay, "r s", 15);
    greedy_turn(*fork, "r s", 15);
    CHECK(fork->tokens() == replay.tokens());
    CHECK(std::equal(fork->last_logits().begin(), fork->last_logits().end(),
                     replay.last_logits().begin()));
  }
}

TEST_CASE("fork refuses an id in use") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  auto o = session_options();
  o.id = "taken";
  engine::Session s(engine, o);
  try {
    s.fork("taken");
    FAIL("a fork with a used id must fail");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
  }
  CHECK(engine->stats().blocks.used == 0);
}

TEST_CASE("rewind then resend equals the original") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  engine::Session s(engine, session_options("Once upon a time"));
  greedy_turn(s, "there was a dog", 20);
  const auto after_one = s.tokens();
  const auto messages_after_one = s.messages().size();
  greedy_turn(s, "The dog", 37);
  const auto after_two = s.tokens();
  const auto used_after_two = engine->stats().blocks.used;

  s.rewind(2);
  CHECK(s.tokens() == after_one);
  CHECK(s.messages().size() == messages_after_one);
  CHECK(engine->stats().blocks.used < used_after_two);  // the dropped turn's blocks are freed
  greedy_turn(s, "The dog", 37);
  CHECK(s.tokens() == after_two);

  s.rewind(4);  // everything but the system prompt
  CHECK(s.tokens().empty());
  CHECK(s.messages().size() == 1);
  greedy_turn(s, "there was a dog", 20);
  greedy_turn(s, "The dog", 37);
  CHECK(s.tokens() == after_two);
  CHECK_THROWS_AS(s.rewind(5), Error);
}

// The system prompt's ids are rendered with the first user message: rewound past it, the
// system turn holds none, as in a new session, and the turns' ids add up to the session's.
TEST_CASE("rewound to its system prompt, a conversation's turns count what a new one's do") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  const auto token_sum = [](const engine::Session& s) {
    size_t n = 0;
    for (const auto& m : s.messages()) n += m.n_tokens;
    return n;
  };
  engine::Session fresh(engine, session_options("Once upon a time"));
  REQUIRE(fresh.messages().size() == 1);
  for (const uint32_t exchanges : {1u, 2u}) {
    CAPTURE(exchanges);
    engine::Session s(engine, session_options("Once upon a time"));
    greedy_turn(s, "there was a dog", 5);
    REQUIRE(s.messages().front().n_tokens > 0);  // the system prompt's share of the first turn
    if (exchanges == 2) greedy_turn(s, "The dog", 5);
    s.rewind(2 * exchanges);
    REQUIRE(s.tokens().empty());
    REQUIRE(s.messages().size() == 1);
    CHECK(s.messages().front().n_tokens == fresh.messages().front().n_tokens);
    CHECK(token_sum(s) == s.tokens().size());

    // The next turn renders the system prompt again, and counts it as a new session does.
    greedy_turn(s, "there was a dog", 5);
    engine::Session next(engine, session_options("Once upon a time"));
    greedy_turn(next, "there was a dog", 5);
    CHECK(s.tokens() == next.tokens());
    CHECK(s.messages().front().n_tokens == next.messages().front().n_tokens);
    CHECK(token_sum(s) == s.tokens().size());
  }
}

TEST_CASE("rewinding only a reply leaves the message with an empty, closed reply") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("", "mistral"));
  greedy_turn(s, "a b", 5);
  const size_t before_reply = s.messages().back().token_begin;
  s.rewind(1);
  CHECK(s.messages().size() == 1);
  CHECK(s.tokens().size() == before_reply);
  const auto st = greedy_turn(s, "c", 3);
  // The next turn starts with the end token that closes the empty reply.
  CHECK(s.tokens()[before_reply] == engine->tokenizer().eos_id());
  CHECK(st.prompt_tokens > 1);
  // The transcript records that reply, empty: user and assistant keep alternating.
  REQUIRE(s.messages().size() == 4);
  CHECK(s.messages()[1].role == engine::Role::assistant);
  CHECK(s.messages()[1].text.empty());
  CHECK(s.messages()[1].n_tokens == 0);
  CHECK(s.messages()[2].role == engine::Role::user);
  CHECK(s.messages()[2].text == "c");
  CHECK(s.messages()[3].role == engine::Role::assistant);
}

// Through a store: the empty reply is committed with the next turn, and a session reopened
// from the store has the same messages and ids.
TEST_CASE("a rewound reply is stored as an empty one when the next turn is sent") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  std::vector<engine::Message> messages;
  std::vector<int32_t> tokens;
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
    engine::SessionOptions options = session_options("", "raw");
    options.id = "kept";
    engine::Session s(engine, options);
    greedy_turn(s, "a b", 5);
    greedy_turn(s, "c d", 5);
    s.rewind(1);
    greedy_turn(s, "e", 4);
    messages = s.messages();
    tokens = s.tokens();
  }
  REQUIRE(messages.size() == 6);
  for (size_t i = 0; i < messages.size(); ++i) {
    CHECK(messages[i].role == (i % 2 ? engine::Role::assistant : engine::Role::user));
  }
  CHECK(messages[3].text.empty());
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  auto reopened = engine::Session::open(engine, "kept");
  REQUIRE(reopened->messages().size() == messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    CAPTURE(i);
    CHECK(reopened->messages()[i].role == messages[i].role);
    CHECK(reopened->messages()[i].text == messages[i].text);
    CHECK(reopened->messages()[i].n_tokens == messages[i].n_tokens);
  }
  CHECK(reopened->tokens() == tokens);
}

TEST_CASE("overflow ERROR refuses a message that does not fit and keeps the session") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("a b", "chatml"));
  greedy_turn(s, "c d", 40);
  const auto before = s.tokens();
  try {
    greedy_turn(s, "e f g h", 40);
    greedy_turn(s, "i j", 40);
    FAIL("the context of 128 cannot hold this");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
  }
  CHECK(s.tokens().size() <= 128);
}

TEST_CASE("overflow DROP_OLDEST drops the oldest exchanges, keeps the system prompt, rebuilds") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  auto o = session_options("a b c", "chatml");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session s(engine, o);
  std::vector<engine::TurnStats> stats;
  const char* messages[] = {"d e", "f g h", "i j", "k l m", "n o", "p q r"};
  for (const char* m : messages) stats.push_back(greedy_turn(s, m, 30));
  CHECK(s.tokens().size() <= 128);

  // Some turn had to drop: it rebuilt the conversation.
  CHECK(std::any_of(stats.begin(), stats.end(),
                    [](const engine::TurnStats& t) { return t.kv_source == engine::KvSource::rebuilt; }));
  REQUIRE(!s.messages().empty());
  CHECK(s.messages().front().role == engine::Role::system);
  CHECK(s.messages().front().text == "a b c");
  CHECK(s.messages().back().role == engine::Role::assistant);
  CHECK(s.messages()[s.messages().size() - 2].text == "p q r");
  CHECK(s.messages().size() < 1 + 2 * std::size(messages));
  // The rebuilt conversation starts like a fresh one with the same system prompt, and the
  // kept messages' ids line up with the conversation's.
  engine::Session fresh(engine, session_options("a b c", "chatml"));
  const auto first_kept = s.messages()[1];
  greedy_turn(fresh, first_kept.text, 1);
  const auto& t = s.tokens();
  const size_t first_turn = fresh.tokens().size() - 1;
  CHECK(std::equal(fresh.tokens().begin(), fresh.tokens().begin() + long(first_turn), t.begin()));

  // A rebuilt session goes on normally.
  const auto next = greedy_turn(s, "s", 5);
  CHECK(next.generated_tokens == 5);
}

TEST_CASE("DROP_OLDEST makes room for the whole reply, not only for its first token") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);  // context 128
  auto o = session_options("a b c", "raw");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session s(engine, o);
  for (const char* m : {"d e", "f g", "h i", "j k", "l m", "n o"}) {
    CAPTURE(m);
    const auto t = greedy_turn(s, m, 30);  // four such exchanges are more than the context
    CHECK(t.generated_tokens == 30);
    CHECK(t.stop_reason == engine::StopReason::max_tokens);
  }
  CHECK(s.messages().front().text == "a b c");
}

TEST_CASE("DROP_OLDEST: a reply longer than dropping can make room for drops nothing more") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);  // context 128
  auto o = session_options("a b c", "raw");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session s(engine, o);
  greedy_turn(s, "d e", 10);
  const size_t before = s.messages().size();
  const auto t = greedy_turn(s, "f g", 500);  // more than the whole context
  CHECK(s.messages().size() == before + 2);  // the first exchange stays: it fits
  CHECK(t.kv_source != engine::KvSource::rebuilt);
  CHECK(t.stop_reason == engine::StopReason::context_end);
  CHECK(s.tokens().size() == 128);
}

TEST_CASE("DROP_OLDEST still refuses a message that cannot fit even alone") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  auto o = session_options("a b c", "chatml");
  o.overflow = engine::OverflowPolicy::drop_oldest;
  engine::Session s(engine, o);
  greedy_turn(s, "d", 5);
  std::string huge;
  for (int i = 0; i < 100; ++i) huge += "x y ";
  try {
    greedy_turn(s, huge, 5);
    FAIL("the message was taken");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    CHECK(std::string(e.what()).find("even with every earlier exchange dropped") !=
          std::string::npos);
  }
  CHECK(s.messages().size() == 3);  // nothing was dropped for nothing
}

// Under "raw" an empty message adds no ids: the reply starts from the logits after the last
// kept token, which a rewind must not leave as those of the undone turn.
TEST_CASE("an empty message after a rewind replies as it would have without the undone turn") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  for (const size_t undone : {size_t(1), size_t(2)}) {
    CAPTURE(undone);
    engine::Session rewound(engine, session_options("", "raw"));
    greedy_turn(rewound, "Once upon a time", 10);
    greedy_turn(rewound, " Tom ran to the big red", 10);
    rewound.rewind(undone);
    engine::Session reference(engine, session_options("", "raw"));
    greedy_turn(reference, "Once upon a time", 10);
    if (undone == 1) reference.add_exchange(" Tom ran to the big red", "");  // reply left open
    REQUIRE(rewound.tokens() == reference.tokens());
    greedy_turn(rewound, "", 10);
    greedy_turn(reference, "", 10);
    CHECK(rewound.tokens() == reference.tokens());
  }
}

// The stored conversation ends with the user message: reopened, its reply is missing as it is
// in the live session, so the next turn closes it alike.
TEST_CASE("a conversation rewound to a user message goes on alike after it is reopened") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  for (const std::string id : {"first", "later"}) {
    CAPTURE(id);
    engine::SessionOptions options = session_options("", "llama2");
    options.id = id;
    std::vector<int32_t> live_tokens;
    {
      engine::Session s(engine, options);
      if (id == "later") greedy_turn(s, "a b", 5);
      greedy_turn(s, "c d", 5);
      s.rewind(1);
      const auto live = s.fork(id + "-live");
      greedy_turn(*live, "e", 4);
      live_tokens = live->tokens();
    }
    auto reopened = engine::Session::open(engine, id);
    greedy_turn(*reopened, "e", 4);
    CHECK(reopened->tokens() == live_tokens);
  }
}

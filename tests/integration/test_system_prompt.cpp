// Session::set_system_prompt: a conversation that goes on under a new system prompt reads as
// one that had it from the start (the same ids and messages, the same greedy replies, the
// model run over them agreeing), keeps its replies' ids, and is stored with it; a prompt that
// does not fit, or is not UTF-8, changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "model_runner.h"
#include "session_fixture.h"
#include "support/error_check.h"
#include "support/shared_assets.h"
#include "text/chat_template.h"

using namespace parley;
using namespace parley::test;

namespace {

const std::vector<std::pair<std::string, std::string>> kExchanges = {
    {"Tell me about Lily.", "Lily had a red ball."}, {"And then?", "She played all day."}};

void write_exchanges(engine::Session& s) {
  for (const auto& [user, reply] : kExchanges) s.add_exchange(user, reply);
}

bool same_messages(const engine::Session& a, const engine::Session& b) {
  const auto& ma = a.messages();
  const auto& mb = b.messages();
  if (ma.size() != mb.size()) return false;
  for (size_t i = 0; i < ma.size(); ++i) {
    if (ma[i].role != mb[i].role || ma[i].text != mb[i].text ||
        ma[i].n_tokens != mb[i].n_tokens || ma[i].token_begin != mb[i].token_begin ||
        ma[i].closed != mb[i].closed) {
      return false;
    }
  }
  return true;
}

// The last n ids of `s` are the model's greedy choices over the whole conversation, computed
// at once by a runner that never saw the session's KV.
void check_greedy_tail(const ModelRunner& runner, const engine::Session& s, size_t n) {
  const auto& ids = s.tokens();
  const auto logits = runner.logits(ids, kv::KvType::f32);
  const size_t n_vocab = logits.size() / ids.size();
  for (size_t p = ids.size() - n; p < ids.size(); ++p) {
    CAPTURE(p);
    CHECK(is_greedy_choice(logits, n_vocab, ids, p));
  }
}

}  // namespace

TEST_CASE("a new system prompt: the conversation reads as one that had it from the start") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const ModelRunner runner(gguf.string());
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"", "You tell stories."}, {"You tell stories.", "You are a dog."},
      {"You tell stories.", ""}};
  int cases = 0;
  for (const char* name : {"raw", "llama2", "chatml", "zephyr", "mistral"}) {
    for (const auto& [before, after] : changes) {
      CAPTURE(std::string(name));
      CAPTURE(before);
      CAPTURE(after);
      // Scopes of their own: the changed session finds no other session's blocks.
      const std::string scope = std::to_string(++cases);
      engine::Session changed(engine, session_options(before, name, "changed-" + scope));
      engine::Session always(engine, session_options(after, name, "always-" + scope));
      write_exchanges(changed);
      write_exchanges(always);
      const auto old_ids = changed.tokens();
      changed.set_system_prompt(after);
      CHECK(changed.tokens() == always.tokens());
      CHECK(same_messages(changed, always));
      CHECK(changed.kv_bytes_resident() == 0);  // it held the old positions

      const auto a = greedy_turn(changed, "What did she see?", 4);
      const auto b = greedy_turn(always, "What did she see?", 4);
      // Only whole blocks the old and the new ids begin with alike (BOS and the template's
      // first markers) come from the prefix cache; the rest is computed again.
      const auto& ids = changed.tokens();
      const size_t alike = size_t(
          std::mismatch(old_ids.begin(), old_ids.end(), ids.begin(), ids.end()).first -
          old_ids.begin());
      CHECK(a.reused_tokens <= alike / 16 * 16);
      CHECK(a.reused_tokens + a.computed_tokens == ids.size() - 4);
      CHECK(b.reused_tokens > 0);
      CHECK(changed.tokens() == always.tokens());
      // The model run directly, once per template (slow under the sanitizers).
      if (!before.empty() && !after.empty()) check_greedy_tail(runner, changed, 4);
    }
  }
}

TEST_CASE("generated replies keep their ids under a new system prompt") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  for (const char* name : {"raw", "llama2", "chatml"}) {
    CAPTURE(std::string(name));
    engine::Session s(engine, session_options("You tell stories.", name));
    greedy_turn(s, "Tell me about Lily.", 12);
    greedy_turn(s, "And then?", 12);
    const auto old_ids = s.tokens();
    const uint32_t old_first_end = s.messages()[2].token_begin;  // the first reply's start

    s.set_system_prompt("You are a small dog who likes to play in the park.");
    const text::ChatTemplate tmpl(*text::template_from_name(name), engine->tokenizer());
    const auto opening = tmpl.render_user_turn(
        "You are a small dog who likes to play in the park.", "Tell me about Lily.", true);
    const auto& ids = s.tokens();
    REQUIRE(ids.size() == opening.size() + old_ids.size() - old_first_end);
    CHECK(std::equal(opening.begin(), opening.end(), ids.begin()));
    CHECK(std::equal(old_ids.begin() + old_first_end, old_ids.end(),
                     ids.begin() + std::ptrdiff_t(opening.size())));
    REQUIRE(s.messages().size() == 5);
    CHECK(s.messages()[0].text == "You are a small dog who likes to play in the park.");
    CHECK(s.messages()[2].token_begin == opening.size());
    CHECK(s.messages()[4].token_begin ==
          old_ids.size() - old_first_end + opening.size() - s.messages()[4].n_tokens);
    greedy_turn(s, "Where did she go?", 8);
  }
}

TEST_CASE("a system prompt set before the first message opens the conversation") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  engine::Session changed(engine, session_options("", "llama2", "changed"));
  engine::Session always(engine, session_options(story_system_prompt(), "llama2", "always"));
  changed.set_system_prompt(story_system_prompt());
  REQUIRE(changed.messages().size() == 1);
  CHECK(changed.messages()[0].role == engine::Role::system);
  CHECK(changed.messages()[0].n_tokens == 0);  // as a new session's, until its first turn
  engine::TurnStats prepared;
  changed.prepare(prepared);  // the new opening's full blocks
  CHECK(prepared.computed_tokens > 0);
  greedy_turn(changed, "Hello.", 8);
  greedy_turn(always, "Hello.", 8);
  CHECK(changed.tokens() == always.tokens());
  CHECK(same_messages(changed, always));

  changed.set_system_prompt("");
  CHECK(changed.messages().size() == 2);
  CHECK(changed.messages()[0].role == engine::Role::user);
}

TEST_CASE("the same system prompt again changes nothing; the KV stays") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session s(engine, session_options("a b c", "raw"));
  greedy_turn(s, "d e", 6);
  const auto ids = s.tokens();
  const auto resident = s.kv_bytes_resident();
  s.set_system_prompt("a b c");
  CHECK(s.tokens() == ids);
  CHECK(s.kv_bytes_resident() == resident);
  CHECK(greedy_turn(s, "f g", 4).reused_tokens == ids.size() - 1);
}

TEST_CASE("a system prompt that does not fit, or is not UTF-8, changes nothing") {
  auto engine = open_engine(small_synthetic_model(), kv::KvType::int8);  // context 128
  engine::Session s(engine, session_options("a b c", "raw"));
  greedy_turn(s, "d e", 20);
  greedy_turn(s, "f g", 20);
  const auto ids = s.tokens();
  const auto messages = s.messages().size();
  std::string long_prompt;
  for (int i = 0; i < 60; ++i) long_prompt += "x y ";
  CHECK_PARLEY_ERROR(s.set_system_prompt(long_prompt), Status::context_full,
                     "with this system prompt the conversation takes");
  CHECK_PARLEY_ERROR(s.set_system_prompt("a \xC3"), Status::invalid_argument,
                     "not valid UTF-8");
  CHECK(s.tokens() == ids);
  CHECK(s.messages().size() == messages);
  CHECK(s.messages()[0].text == "a b c");
  CHECK(greedy_turn(s, "h i", 4).reused_tokens == ids.size() - 1);  // the KV stayed

  // A prompt that fits alone but not with the conversation is refused too.
  engine::Session empty(engine, session_options("", "raw"));
  std::string fits_alone;
  for (int i = 0; i < 40; ++i) fits_alone += "x y ";
  empty.set_system_prompt(fits_alone);
  CHECK_PARLEY_ERROR(s.set_system_prompt(fits_alone), Status::context_full,
                     "the context holds 128");
}

TEST_CASE("under DROP_OLDEST a longer system prompt drops the oldest exchanges to fit") {
  const TempDir dir;
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string()});  // context 128
  auto options = session_options("a b", "raw");
  options.overflow = engine::OverflowPolicy::drop_oldest;
  options.id = "dropping";
  engine::Session s(engine, options);
  for (const char* message : {"c d", "e f", "g h", "i j"}) greedy_turn(s, message, 20);
  REQUIRE(s.tokens().size() > 80);
  std::string longer;
  for (int i = 0; i < 20; ++i) longer += "x y ";
  s.set_system_prompt(longer);
  CHECK(s.tokens().size() < 128);
  REQUIRE(s.messages().size() >= 3);
  CHECK(s.messages().size() < 9);
  CHECK(s.messages()[0].text == longer);
  CHECK(s.messages()[1].text != "c d");  // the oldest went
  CHECK(s.messages()[s.messages().size() - 2].text == "i j");  // the last message stays
  // The store has the conversation as it is now, and it goes on.
  const auto turns = engine->store()->load_turns("dropping");
  REQUIRE(turns.size() == s.messages().size());
  std::vector<int32_t> stored_ids;
  for (const auto& t : turns) {
    stored_ids.insert(stored_ids.end(), t.token_ids.begin(), t.token_ids.end());
  }
  CHECK(stored_ids == s.tokens());
  CHECK(greedy_turn(s, "k", 4).generated_tokens == 4);

  // A prompt that leaves no room for the last exchange, though it fits alone, is refused.
  const text::ChatTemplate raw(text::TemplateKind::raw, engine->tokenizer());
  std::string too_long;
  while (raw.render_user_turn(too_long + "x y ", "", true).size() < 128) too_long += "x y ";
  REQUIRE(raw.render_user_turn(too_long, "", true).size() >= 124);
  const auto ids = s.tokens();
  CHECK_PARLEY_ERROR(s.set_system_prompt(too_long), Status::context_full,
                     "even with every exchange before the last message dropped");
  CHECK(s.tokens() == ids);
  CHECK(s.messages()[0].text == longer);
}

TEST_CASE("a new system prompt is stored: reopened, spilled or not, the conversation has it") {
  const TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  auto options = session_options("a b c", "raw");
  options.id = "stored";
  std::vector<int32_t> ids;
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
    engine::Session s(engine, options);
    greedy_turn(s, "d e", 10);
    greedy_turn(s, "f g", 10);
    REQUIRE(s.spill());
    s.set_system_prompt("h i j k");
    CHECK(!s.spilled());
    CHECK(s.kv_bytes_stored() == 0);  // the stored KV held the old ids
    ids = s.tokens();
  }
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  auto s = engine::Session::open(engine, "stored");
  CHECK(s->tokens() == ids);
  REQUIRE(s->messages().size() == 5);
  CHECK(s->messages()[0].role == engine::Role::system);
  CHECK(s->messages()[0].text == "h i j k");

  // The stored header has it too: a conversation rewound to its start opens with it again.
  s->rewind(4);
  CHECK(s->tokens().empty());
  greedy_turn(*s, "l m", 6);
  engine::Session always(engine, session_options("h i j k", "raw", "always"));
  greedy_turn(always, "l m", 6);
  CHECK(s->tokens() == always.tokens());
}

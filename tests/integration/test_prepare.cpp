// Session::prepare: the work a next turn would begin with, done ahead of it. A new
// conversation computes its opening and its first turn takes it; a spilled or reopened one gets
// its KV back; tokens an interrupt left without KV are computed. Replies and logits are those
// of a session never prepared, bit for bit, and a stopped or refused prepare loses nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "session_fixture.h"
#include "support/error_check.h"
#include "support/shared_assets.h"
#include "text/chat_template.h"

using namespace parley;
using namespace parley::test;

namespace {

engine::TurnStats prepare(engine::Session& s) {
  engine::TurnStats stats;
  const auto use = s.try_use();
  REQUIRE(use);
  s.prepare(stats);
  return stats;
}

bool same_logits(const engine::Session& a, const engine::Session& b) {
  const auto la = a.last_logits();
  const auto lb = b.last_logits();
  return std::equal(la.begin(), la.end(), lb.begin(), lb.end());
}

// Full blocks of the opening a template renders for `system`: what prepare computes.
uint32_t opening_full_tokens(const engine::Engine& engine, text::TemplateKind kind,
                             const std::string& system) {
  const text::ChatTemplate tmpl(kind, engine.tokenizer());
  return uint32_t(tmpl.render_system(system).size() / 16 * 16);
}

}  // namespace

TEST_CASE("prepare computes a new conversation's opening, and its first turn takes it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  for (auto type : {kv::KvType::int8, kv::KvType::f32}) {
    auto engine = open_engine(gguf.string(), type);
    for (const char* name : {"raw", "llama2", "chatml"}) {
      CAPTURE(std::string(kv::kv_type_name(type)));
      CAPTURE(name);
      const uint32_t opening =
          opening_full_tokens(*engine, *text::template_from_name(name), story_system_prompt());
      REQUIRE(opening >= 10 * 16);
      // Scopes of their own: neither finds the other's blocks.
      const std::string scope(name);
      engine::Session prepared(engine, session_options(story_system_prompt(), name, "p-" + scope));
      engine::Session plain(engine, session_options(story_system_prompt(), name, "q-" + scope));
      const auto first = prepare(prepared);
      CHECK(first.computed_tokens == opening);
      CHECK(first.reused_tokens == 0);
      CHECK(first.kv_source == engine::KvSource::fresh);
      CHECK(prepared.kv_bytes_resident() > 0);
      CHECK(prepared.tokens().empty());  // nothing is in the conversation yet
      const auto again = prepare(prepared);
      CHECK(again.computed_tokens == 0);
      CHECK(again.reused_tokens == opening);

      const auto a = greedy_turn(prepared, "Lily", 12);
      const auto b = greedy_turn(plain, "Lily", 12);
      CHECK(a.reused_tokens == opening);
      CHECK(a.computed_tokens == a.prompt_tokens - opening);
      CHECK(b.reused_tokens == 0);
      CHECK(prepared.tokens() == plain.tokens());
      CHECK(same_logits(prepared, plain));
      // The opening's blocks are the session's own now, not held twice.
      CHECK(prepared.kv_bytes_resident() == plain.kv_bytes_resident());
    }
  }
}

TEST_CASE("a prepared opening is shared with the sessions of its scope that start alike") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  const uint32_t opening =
      opening_full_tokens(*engine, text::TemplateKind::raw, story_system_prompt());
  engine::Session first(engine, session_options(story_system_prompt()));
  CHECK(prepare(first).computed_tokens == opening);
  const auto used = engine->stats().blocks.used;
  CHECK(used == opening / 16);
  engine::Session second(engine, session_options(story_system_prompt()));
  const auto found = prepare(second);
  CHECK(found.computed_tokens == 0);
  CHECK(found.reused_tokens == opening);
  CHECK(engine->stats().blocks.used == used);  // one copy
  CHECK(engine->stats().blocks.shared == used);
  // Another scope computes its own.
  engine::Session other(engine, session_options(story_system_prompt(), "raw", "other"));
  CHECK(prepare(other).computed_tokens == opening);
}

TEST_CASE("a session with no opening of a full block has nothing to prepare") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  for (const std::string system : {"", "Be kind."}) {
    CAPTURE(system);
    REQUIRE(opening_full_tokens(*engine, text::TemplateKind::raw, system) == 0);
    engine::Session s(engine, session_options(system, "raw"));
    const auto stats = prepare(s);
    CHECK(stats.computed_tokens == 0);
    CHECK(stats.reused_tokens == 0);
    CHECK(s.kv_bytes_resident() == 0);
    CHECK(greedy_turn(s, "Hi", 4).reused_tokens == 0);
  }
}

TEST_CASE("prepare brings spilled KV back ahead of the turn, which then computes only its own") {
  const TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  engine::Session spilled(engine, session_options("", "raw", "a"));
  engine::Session kept(engine, session_options("", "raw", "b"));
  for (auto* s : {&spilled, &kept}) {
    greedy_turn(*s, "a b c d e f g h i j k l m n o p q r s t", 20);
    greedy_turn(*s, "u v w", 10);
  }
  {
    const auto use = spilled.try_use();
    REQUIRE(spilled.spill());
  }
  CHECK(spilled.kv_bytes_resident() == 0);
  const auto p = prepare(spilled);
  CHECK(p.kv_source == engine::KvSource::restored);
  CHECK(p.restore_ms >= 0);
  CHECK(p.reused_tokens == spilled.tokens().size() - 1);
  CHECK(p.computed_tokens == 0);
  CHECK_FALSE(spilled.spilled());
  CHECK(prepare(spilled).kv_source == engine::KvSource::resident);

  const auto a = greedy_turn(spilled, "x y", 10);
  const auto b = greedy_turn(kept, "x y", 10);
  CHECK(a.kv_source == engine::KvSource::resident);
  CHECK(a.restore_ms == 0);
  CHECK(a.computed_tokens == b.computed_tokens);  // the new message and the pending token
  CHECK(a.computed_tokens == a.prompt_tokens + 1);
  CHECK(spilled.tokens() == kept.tokens());
  CHECK(same_logits(spilled, kept));
}

TEST_CASE("a conversation reopened by a restarted engine is prepared from the store") {
  const TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  const char* opening = "a b c d e f g h i j k l m n o p q r s t u v";
  std::vector<int32_t> uninterrupted;
  std::vector<float> logits;
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
    auto options = session_options("", "raw");
    options.id = "resumed";
    engine::Session s(engine, options);
    greedy_turn(s, opening, 30);
    engine::Session twin(engine, session_options("", "raw", "twin"));
    greedy_turn(twin, opening, 30);
    greedy_turn(twin, "w x", 12);
    uninterrupted = twin.tokens();
    logits.assign(twin.last_logits().begin(), twin.last_logits().end());
  }  // closing spills both to the store
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  auto s = engine::Session::open(engine, "resumed");
  CHECK(s->spilled());
  const auto p = prepare(*s);
  CHECK(p.kv_source == engine::KvSource::restored);
  CHECK(p.reused_tokens == s->tokens().size() - 1);
  CHECK(p.computed_tokens == 0);
  const auto a = greedy_turn(*s, "w x", 12);
  CHECK(a.kv_source == engine::KvSource::resident);
  CHECK(a.computed_tokens == a.prompt_tokens + 1);
  CHECK(s->tokens() == uninterrupted);
  const auto la = s->last_logits();
  CHECK(std::equal(la.begin(), la.end(), logits.begin(), logits.end()));
}

TEST_CASE("a stopped prepare keeps what it computed, and the next one goes on from there") {
  auto engine = open_long_context_engine();
  std::string system;
  for (int i = 0; i < 250; ++i) system += "a b c ";
  engine::Session stopped(engine, session_options(system, "raw", "stopped"));
  engine::Session plain(engine, session_options(system, "raw", "plain"));
  const uint32_t opening = opening_full_tokens(*engine, text::TemplateKind::raw, system);
  REQUIRE(opening > 512);  // two prefill chunks at least

  engine::TurnStats first;
  const Status status = run_while_stopping(stopped, [&] { stopped.prepare(first); });
  CHECK(status == Status::cancelled);
  CHECK(first.computed_tokens < opening);

  const auto rest = prepare(stopped);
  CHECK(rest.reused_tokens == first.computed_tokens);
  CHECK(rest.reused_tokens + rest.computed_tokens == opening);
  const auto a = greedy_turn(stopped, "d e", 6);
  const auto b = greedy_turn(plain, "d e", 6);
  CHECK(a.reused_tokens == opening);
  CHECK(b.reused_tokens == 0);
  CHECK(stopped.tokens() == plain.tokens());
  CHECK(same_logits(stopped, plain));
}

TEST_CASE("prepare computes the prompt an interrupt left without KV, all but its last token") {
  auto engine = open_long_context_engine();
  engine::Session stopped(engine, session_options("", "raw", "stopped"));
  engine::Session rewound(engine, session_options("", "raw", "rewound"));
  std::string message;
  for (int i = 0; i < 250; ++i) message += "a b c ";
  const auto [status, sent] = send_stopped_beside_rewound(stopped, rewound, message);
  REQUIRE(status == Status::cancelled);
  REQUIRE(sent.computed_tokens < sent.prompt_tokens);

  const auto p = prepare(stopped);
  // (The stop may come before the first chunk: nothing computed then.)
  CHECK(p.kv_source ==
        (sent.computed_tokens > 0 ? engine::KvSource::resident : engine::KvSource::fresh));
  CHECK(p.reused_tokens == sent.computed_tokens);
  CHECK(p.reused_tokens + p.computed_tokens == stopped.tokens().size() - 1);
  CHECK(prepare(stopped).computed_tokens == 0);
  const auto a = greedy_turn(stopped, "c d", 8);
  greedy_turn(rewound, "c d", 8);
  CHECK(a.computed_tokens == a.prompt_tokens + 1);
  CHECK(stopped.tokens() == rewound.tokens());
  CHECK(same_logits(stopped, rewound));
}

TEST_CASE("suspending a prepared session lets its opening go; the first turn still finds it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  auto engine = open_engine_with_store(gguf.string(), kv::KvType::int8, {(dir / "s.db").string()});
  engine::Session s(engine, session_options(story_system_prompt()));
  const uint32_t opening = prepare(s).computed_tokens;
  REQUIRE(opening >= 10 * 16);
  {
    const auto use = s.try_use();
    CHECK_FALSE(s.spill());  // nothing of the conversation to store
  }
  CHECK(s.kv_bytes_resident() == 0);
  CHECK(engine->stats().blocks.used == 0);
  CHECK(engine->stats().blocks.cached == opening / 16);  // cached until the budget needs them
  CHECK(greedy_turn(s, "Lily", 4).reused_tokens == opening);
}

TEST_CASE("prepare beyond the KV budget is OUT_OF_MEMORY and holds nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const uint64_t block_bytes =
      open_engine(gguf.string(), kv::KvType::int8)->stats().kv_bytes_per_token * 16;
  auto engine = open_engine(gguf.string(), kv::KvType::int8, 4 * block_bytes);
  engine::Session s(engine, session_options(story_system_prompt()));
  engine::TurnStats stats;
  {
    const auto use = s.try_use();
    CHECK_PARLEY_ERROR(s.prepare(stats), Status::out_of_memory, "KV");
  }
  CHECK(s.kv_bytes_resident() == 0);
  CHECK(engine->stats().blocks.used == 0);
  // The session and the engine go on: a short conversation fits.
  engine::Session small(engine, session_options("Be kind."));
  CHECK(greedy_turn(small, "Hi", 4).computed_tokens > 0);
}

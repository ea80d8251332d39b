// Prefix sharing: sessions whose conversations start with the same tokens share the KV blocks
// of that prefix (a hit gives the same logits as computing it), only within one cache scope;
// 32 sessions with one system prompt hold a single copy of its full blocks; and the blocks
// outlive the sessions that made them.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "session_fixture.h"
#include "support/shared_assets.h"
#include "text/tokenizer.h"

using namespace parley;
using namespace parley::test;

namespace {

double max_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

}  // namespace

TEST_CASE("a prefix hit gives the same tokens and logits as computing it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  for (auto type : {kv::KvType::int8, kv::KvType::f32}) {
    CAPTURE(std::string(kv::kv_type_name(type)));
    auto engine = open_engine(gguf.string(), type);
    engine::Session first(engine, session_options(story_system_prompt()));
    const auto miss = greedy_turn(first, "Lily", 20);
    CHECK(miss.reused_tokens == 0);
    engine::Session second(engine, session_options(story_system_prompt()));
    const auto hit = greedy_turn(second, "Lily", 20);
    CHECK(hit.reused_tokens >= 12 * 16);
    CHECK(hit.computed_tokens == hit.prompt_tokens - hit.reused_tokens);
    CHECK(second.tokens() == first.tokens());
    CHECK(max_diff(second.last_logits(), first.last_logits()) <= 1e-6);
  }
}

TEST_CASE("different cache scopes never share") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  engine::Session alice(engine, session_options(story_system_prompt(), "raw", "alice"));
  greedy_turn(alice, "Lily", 4);
  const auto hits_before = engine->stats().blocks.prefix_hits;
  engine::Session bob(engine, session_options(story_system_prompt(), "raw", "bob"));
  CHECK(greedy_turn(bob, "Lily", 4).reused_tokens == 0);
  CHECK(engine->stats().blocks.prefix_hits == hits_before);
  engine::Session alice2(engine, session_options(story_system_prompt(), "raw", "alice"));
  CHECK(greedy_turn(alice2, "Lily", 4).reused_tokens > 0);
}

TEST_CASE("32 sessions with one 200-token system prompt hold one copy of its full blocks") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  const size_t system_tokens = engine->tokenizer().encode(story_system_prompt()).size() + 1;  // + BOS
  REQUIRE(system_tokens >= 200);
  const uint64_t shared_blocks = system_tokens / 16;

  std::vector<std::unique_ptr<engine::Session>> sessions;
  for (int i = 0; i < 32; ++i) {
    sessions.push_back(std::make_unique<engine::Session>(engine, session_options(story_system_prompt())));
    const auto stats = greedy_turn(*sessions.back(), "Tom", 2);
    CHECK(stats.reused_tokens == (i == 0 ? 0 : shared_blocks * 16));
  }
  const auto st = engine->stats().blocks;
  CHECK(st.shared == shared_blocks);
  // Each session's own blocks hold the end of the prompt and its reply.
  const uint64_t own = sessions.front()->tokens().size() / 16 + 1 - shared_blocks;
  CHECK(st.used == shared_blocks + 32 * own);
  const uint64_t copies_without_sharing = 32 * (shared_blocks + own);
  MESSAGE("32 sessions: " << st.used << " blocks in use, " << copies_without_sharing
                          << " without sharing");

  // The sessions go; their blocks stay cached, and a new session an hour later still hits.
  sessions.clear();
  CHECK(engine->stats().blocks.used == 0);
  CHECK(engine->stats().blocks.cached >= shared_blocks);
  engine::Session later(engine, session_options(story_system_prompt()));
  CHECK(greedy_turn(later, "Ben", 2).reused_tokens == shared_blocks * 16);
}

TEST_CASE("cached prefix blocks give way when the budget needs their memory") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  // stories260K INT8 blocks: 16 x 480 bytes. A budget of 20 blocks: one long conversation fits.
  auto engine = open_engine(gguf.string(), kv::KvType::int8, 20 * 16 * 480);
  {
    engine::Session s(engine, session_options(story_system_prompt()));
    greedy_turn(s, "Tom", 2);
  }
  CHECK(engine->stats().blocks.cached >= 12);
  engine::Session other(engine, session_options("A different start."));
  greedy_turn(other, "Tom", 250);  // needs 17 blocks: evicts cached ones instead of failing
  const uint64_t needed = (other.tokens().size() - 1 + 15) / 16;  // the last token is pending
  CHECK(needed == 17);
  CHECK(engine->stats().blocks.used == needed);
  CHECK(engine->stats().blocks.cached <= 20 - needed);
}

// Dropping a cached block costs nothing now; spilling a session costs a store write on the
// sending thread and a restore later: cached blocks go first, idle sessions only after them.
TEST_CASE("under budget pressure cached prefix blocks go before idle sessions are spilled") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  auto engine = open_engine_with_store(gguf.string(), kv::KvType::int8,
                                       {(dir / "s.db").string()}, 20 * 16 * 480);
  engine::Session idle(engine, session_options("", "raw", "idle"));
  greedy_turn(idle, "Tom", 40);  // 3 blocks, kept resident while not in use
  {
    engine::Session s(engine, session_options(story_system_prompt(), "raw", "gone"));
    greedy_turn(s, "Tom", 2);
  }
  const uint64_t cached = engine->stats().blocks.cached;
  REQUIRE(cached >= 12);

  // Needs more than the free blocks but fewer than free + cached ones: no spill.
  engine::Session first(engine, session_options("A different start.", "raw", "first"));
  greedy_turn(first, "Tom", 120);
  CHECK_FALSE(idle.spilled());
  CHECK(engine->stats().blocks.cached < cached);

  // Needs more than that: the idle session goes to the store and comes back later.
  engine::Session second(engine, session_options("Another start.", "raw", "second"));
  greedy_turn(second, "Tom", 200);
  CHECK(idle.spilled());
  CHECK(greedy_turn(idle, "Ben", 4).kv_source == engine::KvSource::restored);
}

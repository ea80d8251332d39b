// Spilling a session's KV to the store and bringing it back changes nothing: the restored
// conversation gives bit-identical logits and the same greedy replies as one never spilled;
// a closed engine's sessions continue in a new engine on the same file; the janitor spills
// idle sessions; many sessions under a small budget spill each other and lose nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "common/error.h"
#include "engine/clock.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Turn {
  const char* text;
  uint32_t n;
};

const Turn kTurns[] = {{"a b c d", 20}, {"e f", 13}, {"g h i", 30}};
const Turn kNext = {"j k", 17};

bool same_logits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("spilled and restored equals never spilled, bit for bit") {
  for (auto type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
    CAPTURE(std::string(kv::kv_type_name(type)));
    TempDir dir;
    auto engine = open_engine_with_store(small_synthetic_model(), type, {(dir / "s.db").string()});
    engine::Session spilled(engine, session_options("sys", "raw"));
    engine::Session resident(engine, session_options("sys", "raw"));
    for (const Turn& t : kTurns) {
      greedy_turn(spilled, t.text, t.n);
      greedy_turn(resident, t.text, t.n);
    }
    REQUIRE(spilled.spill());
    CHECK(spilled.spilled());
    CHECK(spilled.kv_bytes_resident() == 0);
    CHECK(spilled.kv_bytes_stored() > 0);

    const auto a = greedy_turn(spilled, kNext.text, kNext.n);
    const auto b = greedy_turn(resident, kNext.text, kNext.n);
    CHECK(a.kv_source == engine::KvSource::restored);
    CHECK(b.kv_source == engine::KvSource::resident);
    CHECK(a.reused_tokens == b.reused_tokens);  // the whole history came back
    CHECK(spilled.tokens() == resident.tokens());
    CHECK(same_logits(spilled.last_logits(), resident.last_logits()));
  }
}

// A reply stopped by interrupt() ends after its last token was fed back, so every token of
// the conversation has its K/V. The store keeps all but the last (which the next turn always
// recomputes for its logits): the session comes back RESTORED, whatever the stop's position
// within a block of 16, and continues as a copy that never left memory.
TEST_CASE("a reply stopped by interrupt() is spilled and restored, not rebuilt") {
  for (auto type : {kv::KvType::int8, kv::KvType::f32}) {
    for (int stop_after = 1; stop_after <= 17; ++stop_after) {
      CAPTURE(std::string(kv::kv_type_name(type)));
      CAPTURE(stop_after);
      TempDir dir;
      auto engine = open_engine_with_store(small_synthetic_model(), type, {(dir / "s.db").string()});
      engine::Session spilled(engine, session_options("sys", "raw"));
      engine::Session resident(engine, session_options("sys", "raw"));
      for (engine::Session* s : {&spilled, &resident}) {
        greedy_turn(*s, "a b c d", 20);
        engine::GenerateParams p;
        p.sampler.temperature = 0;
        p.max_tokens = 40;
        p.ignore_eos = true;
        int pieces = 0;
        const engine::TextSink stop = [&](std::string_view) {
          if (++pieces == stop_after) s->interrupt();  // seen before the next token is sampled
          return true;
        };
        engine::TurnStats stats;
        const auto use = s->try_use();
        try {
          s->send("e f", p, stop, stats);
          FAIL("the reply was not stopped");
        } catch (const Error& e) {
          CHECK(e.status() == Status::cancelled);
        }
      }
      REQUIRE(spilled.tokens() == resident.tokens());
      REQUIRE(spilled.spill());

      const auto a = greedy_turn(spilled, "g h", 12);
      const auto b = greedy_turn(resident, "g h", 12);
      CHECK(a.kv_source == engine::KvSource::restored);
      CHECK(a.reused_tokens + 1 == b.reused_tokens);  // all but the recomputed last token
      CHECK(spilled.tokens() == resident.tokens());
    }
  }
}

// What refuses a turn (its options, its length) is checked before the KV comes back.
TEST_CASE("a send refused for its options or its length leaves a spilled session spilled") {
  TempDir dir;
  auto engine =
      open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {(dir / "s.db").string()});
  engine::Session spilled(engine, session_options("sys", "raw"));
  engine::Session resident(engine, session_options("sys", "raw"));
  for (engine::Session* s : {&spilled, &resident}) greedy_turn(*s, kTurns[0].text, kTurns[0].n);
  REQUIRE(spilled.spill());
  const auto refused = [&](const std::string& text, const engine::GenerateParams& p) {
    engine::TurnStats stats;
    const auto use = spilled.try_use();
    try {
      spilled.send(text, p, [](std::string_view) { return true; }, stats);
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  engine::GenerateParams bad;
  bad.sampler.temperature = -1;
  CHECK(refused("e f", bad) == Status::invalid_argument);
  CHECK(spilled.spilled());
  CHECK(spilled.kv_bytes_resident() == 0);
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "a b ";
  CHECK(refused(long_text, engine::GenerateParams{}) == Status::context_full);
  CHECK(spilled.spilled());
  CHECK(spilled.kv_bytes_resident() == 0);

  const auto a = greedy_turn(spilled, kNext.text, kNext.n);
  const auto b = greedy_turn(resident, kNext.text, kNext.n);
  CHECK(a.kv_source == engine::KvSource::restored);
  CHECK(b.kv_source == engine::KvSource::resident);
  CHECK(spilled.tokens() == resident.tokens());
  CHECK(same_logits(spilled.last_logits(), resident.last_logits()));
}

// Rewinding a stored conversation drops the KV of the dropped turns only: in a new engine
// (nothing cached in memory) the next turn restores what was kept instead of recomputing it.
TEST_CASE("a rewound stored conversation restores the KV of the turns it kept") {
  TempDir dir;
  const StoreSetup store{(dir / "s.db").string()};
  engine::SessionOptions options = session_options("sys", "raw");
  options.id = "rewound";
  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
    engine::Session s(engine, options);
    for (const Turn& t : kTurns) greedy_turn(s, t.text, t.n);
  }  // closing spills it
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, store);
  auto s = engine::Session::open(engine, "rewound");
  s->rewind(2);  // the last exchange
  const auto a = greedy_turn(*s, kNext.text, kNext.n);
  CHECK(a.kv_source == engine::KvSource::restored);
  // Whole blocks before the kept ids' last one came from the store.
  const uint32_t kept = kTurns[0].n + kTurns[1].n;  // at least the kept replies' tokens
  CHECK(a.reused_tokens >= kept / 16 * 16);

  engine::Session resident(engine, session_options("sys", "raw", "resident"));
  for (size_t i = 0; i + 1 < std::size(kTurns); ++i) {
    greedy_turn(resident, kTurns[i].text, kTurns[i].n);
  }
  greedy_turn(resident, kNext.text, kNext.n);
  CHECK(s->tokens() == resident.tokens());
  CHECK(same_logits(s->last_logits(), resident.last_logits()));
}

TEST_CASE("a restarted engine continues a stored conversation as if never interrupted") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto o = session_options("sys", "raw");
  o.id = "story";

  // The uninterrupted conversation, for comparison (no store).
  auto reference_engine = open_engine(small_synthetic_model(), kv::KvType::int8);
  engine::Session reference(reference_engine, o);
  for (const Turn& t : kTurns) greedy_turn(reference, t.text, t.n);
  greedy_turn(reference, kNext.text, kNext.n);

  {
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
    engine::Session s(engine, o);
    for (const Turn& t : kTurns) greedy_turn(s, t.text, t.n);
  }  // closing the session spills its KV; the engine goes with it

  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  auto s = engine::Session::open(engine, "story");
  CHECK(s->spilled());
  CHECK(s->messages().size() == reference.messages().size() - 2);
  const auto stats = greedy_turn(*s, kNext.text, kNext.n);
  CHECK(stats.kv_source == engine::KvSource::restored);
  CHECK(stats.restore_ms >= 0);
  CHECK(s->tokens() == reference.tokens());
  CHECK(same_logits(s->last_logits(), reference.last_logits()));
  for (size_t i = 0; i < s->messages().size(); ++i) {
    CHECK(s->messages()[i].text == reference.messages()[i].text);
    CHECK(s->messages()[i].role == reference.messages()[i].role);
  }
}

TEST_CASE("a session reopened without stored KV is rebuilt from its tokens") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto o = session_options("", "raw");
  o.id = "plain";
  std::vector<int32_t> before;
  {
    // F32 KV this time; the next engine uses INT8: the stored KV is of the wrong type.
    auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::f32, {db});
    engine::Session s(engine, o);
    greedy_turn(s, "a b", 10);
    before = s.tokens();
  }
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db});
  auto s = engine::Session::open(engine, "plain");
  CHECK(s->tokens() == before);
  const auto stats = greedy_turn(*s, "c", 5);
  CHECK(stats.kv_source == engine::KvSource::rebuilt);
  CHECK(stats.reused_tokens == 0);
  CHECK(stats.computed_tokens == before.size() + stats.prompt_tokens);
}

TEST_CASE("the janitor spills idle sessions, and the next send brings them back") {
  TempDir dir;
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8,
                                       {(dir / "s.db").string(), 40});
  engine::Session s(engine, session_options());
  greedy_turn(s, "a b c", 8);
  const double deadline = engine::now_ms() + 5000;
  while (!s.spilled() && engine::now_ms() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(s.spilled());
  CHECK(engine->stats().sessions_spilled == 1);
  CHECK(greedy_turn(s, "d", 4).kv_source == engine::KvSource::restored);
}

TEST_CASE("many sessions under a small budget spill each other and keep every transcript") {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  // The tiny model's INT8 blocks are 16 x 2 layers x 2 x 1 head x 16 (+ scales) = 1,280 bytes:
  // a budget of 12 blocks holds about three of these conversations at a time.
  const uint64_t block = 16 * (2 * 2 * 16 + 2 * 2 * 4);
  auto engine = open_engine_with_store(small_synthetic_model(), kv::KvType::int8, {db}, 12 * block);
  std::vector<std::unique_ptr<engine::Session>> sessions;
  for (int i = 0; i < 10; ++i) {
    auto o = session_options("", "raw");
    o.id = "s" + std::to_string(i);
    sessions.push_back(std::make_unique<engine::Session>(engine, o));
  }
  // Each conversation its own words, so that none shares blocks with another.
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < sessions.size(); ++i) {
      greedy_turn(*sessions[i], std::string(1, char('a' + i)) + " b c", 12);
    }
  }
  const auto st = engine->stats();
  CHECK(st.sessions_spilled >= 6);
  CHECK(st.blocks.used <= 12);
  // Every conversation is whole in the store, and matches what the session holds.
  for (auto& s : sessions) {
    const auto turns = engine->store()->load_turns(s->id());
    CHECK(turns.size() == 6);
    std::vector<int32_t> ids;
    for (const auto& t : turns) ids.insert(ids.end(), t.token_ids.begin(), t.token_ids.end());
    CHECK(ids == s->tokens());
  }
}

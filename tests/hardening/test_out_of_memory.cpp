// Out of memory: the n-th allocation (C++ or SQLite's own) fails during an engine open, a
// spill, a restore and a close, for n = 1, 2, ... over the operation's allocations (all of the
// first ones, then a spread up to the last). Each call returns PARLEY_OK or
// PARLEY_E_OUT_OF_MEMORY, the session goes on with exactly the conversation it would have had,
// and the store keeps every turn. Under AddressSanitizer (detect_leaks=1) nothing may leak.
// zstd's allocations are covered (its contexts take their memory from operator new; each
// spill and restore runs on a new thread, so they are created under the failing allocator).
// Not covered: allocations inside sentencepiece (see sentencepiece_unfailed.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "failing_alloc.h"
#include "hardening_model.h"
#include "parley.h"
#include "replay.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

constexpr uint32_t kReplyTokens = 4;
// Every failure point up to kDensePoints, then kSparsePoints more spread evenly to the last
// one; fewer under a sanitizer, where each attempt (a whole engine open) is much slower.
constexpr uint64_t kDensePoints = kSanitizerBuild ? 20 : 32;
constexpr uint64_t kSparsePoints = kSanitizerBuild ? 20 : 32;

// Two turns fill more than one KV block, so a spill writes a full block and a tail.
const char* const kTurnTexts[] = {"a b c d e f g h", "i j k l m n", "o p q r", "s t u v w"};

std::vector<TurnRecord> turns(size_t n) {
  std::vector<TurnRecord> t;
  for (size_t i = 0; i < n; ++i) t.push_back({kTurnTexts[i], kReplyTokens, kReplyTokens, false});
  return t;
}

std::vector<uint64_t> failure_points(uint64_t total) {
  std::vector<uint64_t> points;
  for (uint64_t n = 1; n <= std::min(total, kDensePoints); ++n) points.push_back(n);
  if (total > kDensePoints) {
    const uint64_t rest = total - kDensePoints;
    for (uint64_t i = 1; i <= kSparsePoints; ++i) {
      const uint64_t n = kDensePoints + (rest * i + kSparsePoints - 1) / kSparsePoints;
      if (n > points.back()) points.push_back(n);
    }
  }
  return points;
}

// A call under a failing allocator may only succeed or report running out of memory.
void check_clean(parley_status st) {
  CHECK_MESSAGE((st == PARLEY_OK || st == PARLEY_E_OUT_OF_MEMORY),
                (std::string(parley_status_name(st)) + ": " + parley_last_error()));
}

// Out-of-memory failures reported from inside zstd, shown for the spill and restore tests;
// whether the sampled failure points meet zstd's few allocations varies, so nothing is
// asserted here: test_out_of_memory_codec.cpp fails each of them in turn.
int g_zstd_failures = 0;

// Runs `call` with the failure armed on a thread of its own: the KV codec keeps its zstd
// contexts per thread, and a new thread creates them under the failing allocator.
parley_status call_on_new_thread(const std::function<void()>& arm,
                                 const std::function<parley_status()>& call) {
  parley_status st = PARLEY_OK;
  std::string error;
  std::thread([&] {
    arm();
    st = call();
    disarm_allocation_failure();
    error = parley_last_error();
  }).join();
  CHECK_MESSAGE((st == PARLEY_OK || st == PARLEY_E_OUT_OF_MEMORY),
                (std::string(parley_status_name(st)) + ": " + error));
  if (st == PARLEY_E_OUT_OF_MEMORY && error.find("zstd") != std::string::npos) ++g_zstd_failures;
  return st;
}

struct Env {
  TempDir dir;
  std::string db = (dir / "oom.db").string();
  std::vector<Transcript> expected;  // after 0, 1, ... turns, replayed with nothing failing
  int next_id = 0;

  Env() {
    install_failing_sqlite_malloc();
    const auto ro = engine_options(hardening_model(), "");
    parley_engine* reference = nullptr;
    REQUIRE(parley_engine_open(&ro, &reference) == PARLEY_OK);
    for (size_t n = 0; n <= std::size(kTurnTexts); ++n) expected.push_back(replay(reference, turns(n)));
    parley_engine_close(reference);
  }

  parley_engine* open_engine() {
    const auto o = engine_options(hardening_model(), db);
    parley_engine* e = nullptr;
    REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
    return e;
  }

  // A new stored session with `n` turns.
  parley_session* session_with(parley_engine* e, size_t n, std::string& id) {
    id = "s" + std::to_string(next_id++);
    parley_session_options so;
    parley_session_options_init(&so);
    so.id = id.c_str();
    so.chat_template = "raw";
    // A scope of its own: its KV blocks are new to the store, so every spill encodes them.
    so.cache_scope = id.c_str();
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
    for (size_t i = 0; i < n; ++i) send(s, i);
    return s;
  }

  static void send(parley_session* s, size_t turn) {
    const auto g = greedy_options(kReplyTokens);
    REQUIRE_MESSAGE(parley_session_send(s, kTurnTexts[turn], &g, nullptr, nullptr, nullptr) == PARLEY_OK,
                    std::string(parley_last_error()));
  }

  void check_transcript(parley_session* s, size_t n_turns) const {
    Transcript t;
    REQUIRE(read_transcript(s, t) == PARLEY_OK);
    CHECK(t == expected[n_turns]);
  }

  void check_stored(parley_engine* e, const std::string& id, size_t n_turns) const {
    parley_session* s = nullptr;
    REQUIRE(parley_session_open(e, id.c_str(), &s) == PARLEY_OK);
    check_transcript(s, n_turns);
    parley_session_close(s);
  }

  // Only the store and its WAL: a failed open must never move the file aside as damaged.
  void check_store_in_place() const {
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = entry.path().filename().string();
      CHECK_MESSAGE((name == "oom.db" || name == "oom.db-wal" || name == "oom.db-shm"), name);
    }
  }
};

// Runs `attempt(arm)` once without failing to count its allocations, then once per failure
// point; `arm` is called by the attempt right before the operation under test.
void for_each_failure_point(bool sticky, const std::function<void(const std::function<void()>&)>& attempt) {
  uint64_t total = 0;
  g_zstd_failures = 0;
  attempt([] { arm_allocation_failure(UINT64_MAX, false); });
  total = disarm_allocation_failure();
  REQUIRE(total > 0);
  const auto points = failure_points(total);
  int fired = 0;
  for (uint64_t n : points) {
    CAPTURE(n);
    attempt([n, sticky] { arm_allocation_failure(n, sticky); });
    disarm_allocation_failure();
    fired += allocation_failure_fired();
  }
  MESSAGE(total << " allocations; " << points.size() << " failure points, " << fired << " fired"
                << std::string(sticky ? " (sticky)" : "") << "; " << g_zstd_failures
                << " reported by zstd");
  CHECK(fired > 0);
}

// Both modes: one allocation fails, then every allocation from the n-th on.
void for_each_failure(const std::function<void(const std::function<void()>&)>& attempt) {
  for (bool sticky : {false, true}) for_each_failure_point(sticky, attempt);
}

Env& env() {
  static Env e;
  return e;
}

}  // namespace

TEST_CASE("out of memory while opening an engine and a stored session") {
  Env& env = ::env();
  std::string id;
  {
    parley_engine* e = env.open_engine();
    parley_session_close(env.session_with(e, 2, id));
    parley_engine_close(e);
  }
  for_each_failure([&](const std::function<void()>& arm) {
    const auto o = engine_options(hardening_model(), env.db);
    parley_engine* e = nullptr;
    parley_session* s = nullptr;
    arm();
    const parley_status st = parley_engine_open(&o, &e);
    const parley_status st2 = st == PARLEY_OK ? parley_session_open(e, id.c_str(), &s) : PARLEY_OK;
    disarm_allocation_failure();
    check_clean(st);
    check_clean(st2);
    CHECK((st == PARLEY_OK) == (e != nullptr));
    parley_session_close(s);
    parley_engine_close(e);
    env.check_store_in_place();
  });
  parley_engine* e = env.open_engine();
  env.check_stored(e, id, 2);
  parley_engine_close(e);
}

// Each attempt opens its own engine, so statements are prepared and caches filled under the
// failing allocator too, and every attempt makes the same allocations.
TEST_CASE("out of memory while spilling a session") {
  Env& env = ::env();
  for_each_failure([&](const std::function<void()>& arm) {
    parley_engine* e = env.open_engine();
    std::string id;
    parley_session* s = env.session_with(e, 2, id);
    call_on_new_thread(arm, [s] { return parley_session_suspend(s); });
    Env::send(s, 2);
    env.check_transcript(s, 3);
    parley_session_close(s);
    env.check_stored(e, id, 3);
    parley_engine_close(e);
  });
}

TEST_CASE("out of memory while a send restores a spilled session") {
  Env& env = ::env();
  for_each_failure([&](const std::function<void()>& arm) {
    parley_engine* e = env.open_engine();
    std::string id;
    parley_session* s = env.session_with(e, 2, id);
    REQUIRE(parley_session_suspend(s) == PARLEY_OK);
    const auto g = greedy_options(kReplyTokens);
    call_on_new_thread(arm, [s, &g] {
      return parley_session_send(s, kTurnTexts[2], &g, nullptr, nullptr, nullptr);
    });
    // A failed turn is either not there at all, or whole (kept in memory, stored later).
    parley_session_info info;
    info.struct_size = sizeof info;
    REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
    CHECK((info.n_turns == 4 || info.n_turns == 6));
    if (info.n_turns == 4) Env::send(s, 2);
    Env::send(s, 3);
    env.check_transcript(s, 4);
    parley_session_close(s);
    env.check_stored(e, id, 4);
    parley_engine_close(e);
  });
}

TEST_CASE("out of memory while closing a session (which spills it)") {
  Env& env = ::env();
  for_each_failure([&](const std::function<void()>& arm) {
    parley_engine* e = env.open_engine();
    std::string id;
    parley_session* s = env.session_with(e, 2, id);
    call_on_new_thread(arm, [s] {
      parley_session_close(s);
      return PARLEY_OK;
    });
    env.check_stored(e, id, 2);
    parley_engine_close(e);
  });
}

// The reply is whole when the failure is armed (from its last piece on): what can fail is the
// turn's commit, after which the turn is kept as with STORAGE, and its stats are filled.
TEST_CASE("out of memory while a send commits its finished turn: kept with its stats") {
  Env& env = ::env();
  const std::string& reply = env.expected[2].texts[3];  // turn 2's reply, replayed alone
  for_each_failure([&](const std::function<void()>& arm) {
    parley_engine* e = env.open_engine();
    std::string id;
    parley_session* s = env.session_with(e, 1, id);
    struct Armer {
      const std::string* reply;
      const std::function<void()>* arm;
      std::string streamed;
    } armer{&reply, &arm, {}};
    const auto on_text = [](const char* utf8, size_t n, void* user) {
      auto* a = static_cast<Armer*>(user);
      a->streamed.append(utf8, n);
      if (a->streamed == *a->reply) (*a->arm)();
      return 0;
    };
    parley_turn_stats stats;
    stats.struct_size = sizeof stats;
    stats.kv_source = -7;  // written only where the turn was kept
    const auto g = greedy_options(kReplyTokens);
    const parley_status st = parley_session_send(s, kTurnTexts[1], &g, on_text, &armer, &stats);
    disarm_allocation_failure();
    check_clean(st);
    parley_session_info info;
    info.struct_size = sizeof info;
    REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
    CHECK((info.n_turns == 2 || info.n_turns == 4));
    if (info.n_turns == 4) {
      CHECK(stats.kv_source >= 0);
      CHECK(stats.generated_tokens == kReplyTokens);
    } else {
      CHECK(st == PARLEY_E_OUT_OF_MEMORY);
      CHECK(stats.kv_source == -7);
      Env::send(s, 1);
    }
    env.check_transcript(s, 2);
    parley_session_close(s);  // a kept turn not yet stored is committed now
    env.check_stored(e, id, 2);
    parley_engine_close(e);
  });
}

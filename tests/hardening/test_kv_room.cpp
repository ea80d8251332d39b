// Room in the KV budget: a send, a reply or a fork that finds the budget full spills idle
// sessions to the store and goes ahead; only a write that cannot fit even then is
// OUT_OF_MEMORY, and it spills nobody for nothing. With several threads at once, the blocks
// one send's spills free are not lost to another send. A spill the store refuses (a full
// disk) is tried once per write, and the error says so.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "hardening_model.h"
#include "parley.h"
#include "support/faulty_vfs.h"
#include "support/log_capture.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

parley_engine* open_engine(const std::string& store, uint64_t budget_blocks) {
  const parley_engine_options eo =
      engine_options(hardening_model(), store, budget_blocks * kHardeningBlockBytes);
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

parley_session* create_session(parley_engine* e, const std::string& id) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.id = id.c_str();
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &o, &s) == PARLEY_OK, parley_last_error());
  return s;
}

parley_status send(parley_session* s, const std::string& text, uint32_t max_tokens) {
  parley_generate_options g = greedy_options(max_tokens);
  g.ignore_eos = 1;
  return parley_session_send(s, text.c_str(), &g, nullptr, nullptr, nullptr);
}

int32_t state_of(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  return info.state;
}

parley_engine_stats stats_of(parley_engine* e) {
  parley_engine_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_engine_get_stats(e, &st) == PARLEY_OK);
  return st;
}

// A message whose turn, as `turn_tokens` counts it, takes more than `above` tokens and at most
// `at_most`.
std::string message_sized(const std::function<size_t(const std::string&)>& turn_tokens,
                          size_t above, size_t at_most) {
  std::string text = "Once";
  for (int words = 0; words < 400; ++words) {
    const size_t n = turn_tokens(text);
    if (n > above) {
      REQUIRE(n <= at_most);
      return text;
    }
    text += words % 2 ? " dog" : " ran";
  }
  FAIL("no message of that size");
  return text;
}

// A message whose first turn in the session takes more than `above` tokens and at most
// `at_most`.
std::string message_of(parley_session* s, uint32_t above, uint32_t at_most) {
  return message_sized(
      [&](const std::string& text) {
        uint32_t prompt = 0, left = 0;
        REQUIRE(parley_session_count_tokens(s, text.c_str(), &prompt, &left) == PARLEY_OK);
        return size_t(prompt);
      },
      above, at_most);
}

}  // namespace

TEST_CASE("a send that fits once an idle session is spilled goes ahead at the first try") {
  TempDir dir;
  parley_engine* e = open_engine((dir / "room.db").string(), 4);  // 64 tokens
  parley_session* idle = create_session(e, "idle");
  REQUIRE(send(idle, "Hello there", 4) == PARLEY_OK);
  parley_session* big = create_session(e, "big");
  // Its prompt and reply need all four blocks: the idle session's must go.
  const std::string message = message_of(big, 48, 56);
  const parley_status sent = send(big, message, 6);
  CHECK_MESSAGE(sent == PARLEY_OK, parley_last_error());
  CHECK(state_of(idle) == PARLEY_SESSION_SPILLED);
  parley_session_close(big);
  parley_session_close(idle);
  parley_engine_close(e);
}

TEST_CASE("a write the budget cannot hold even alone is OUT_OF_MEMORY and spills nobody") {
  TempDir dir;
  parley_engine* e = open_engine((dir / "room.db").string(), 4);
  parley_session* idle = create_session(e, "idle");
  REQUIRE(send(idle, "Hello there", 4) == PARLEY_OK);
  parley_session* big = create_session(e, "big");
  const std::string message = message_of(big, 64, 80);  // more than four blocks
  CHECK(send(big, message, 4) == PARLEY_E_OUT_OF_MEMORY);
  CHECK(state_of(idle) != PARLEY_SESSION_SPILLED);  // spilling it could not have helped
  parley_session_close(big);
  parley_session_close(idle);
  parley_engine_close(e);
}

TEST_CASE("a fork makes room as a send does") {
  // The same two conversations twice: once to count their blocks, then in a budget of exactly
  // that many, where the fork's copy of the partly filled last block needs an idle one spilled.
  const auto hold_two = [](parley_engine* e, parley_session*& a, parley_session*& b) {
    a = create_session(e, "a");
    REQUIRE(send(a, "The dog ran to the park", 20) == PARLEY_OK);
    b = create_session(e, "b");
    REQUIRE(send(b, "A cat sat on the mat", 30) == PARLEY_OK);
  };
  TempDir dir;
  uint64_t blocks = 0;
  {
    parley_engine* e = open_engine((dir / "count.db").string(), 64);
    parley_session *a = nullptr, *b = nullptr;
    hold_two(e, a, b);
    blocks = stats_of(e).kv_blocks_used;
    parley_session* fork = nullptr;
    REQUIRE(parley_session_fork(a, nullptr, &fork) == PARLEY_OK);
    REQUIRE(stats_of(e).kv_blocks_used == blocks + 1);  // it copies a block
    parley_session_close(fork);
    parley_session_close(b);
    parley_session_close(a);
    parley_engine_close(e);
  }
  parley_engine* e = open_engine((dir / "room.db").string(), blocks);
  parley_session *a = nullptr, *b = nullptr;
  hold_two(e, a, b);
  const parley_engine_stats full = stats_of(e);
  REQUIRE(full.kv_blocks_used == full.kv_blocks_total);
  REQUIRE(full.kv_blocks_cached == 0);
  parley_session* fork = nullptr;
  CHECK_MESSAGE(parley_session_fork(a, nullptr, &fork) == PARLEY_OK, parley_last_error());
  CHECK(state_of(b) == PARLEY_SESSION_SPILLED);
  parley_session_close(fork);
  parley_session_close(b);
  parley_session_close(a);
  parley_engine_close(e);
}

namespace {

// Three rounds on `n_threads` threads, each with `n_sessions` sessions of its own: `step`
// runs once per session and round, and returns false when a call failed. Checks that none
// did, showing the last error of each thread that had one.
void check_rounds_on_threads(parley_engine* e, int n_threads, int n_sessions,
                             const std::function<bool(int thread, parley_session*)>& step) {
  std::atomic<int> failures{0};
  std::vector<std::string> errors(static_cast<size_t>(n_threads));
  const auto failed = [&](int t) {
    ++failures;
    errors[size_t(t)] = parley_last_error();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<parley_session*> mine;
      for (int i = 0; i < n_sessions; ++i) {
        parley_session_options o;
        parley_session_options_init(&o);
        const std::string id = "npc-" + std::to_string(t) + "-" + std::to_string(i);
        o.id = id.c_str();
        parley_session* s = nullptr;
        if (parley_session_create(e, &o, &s) != PARLEY_OK) {
          failed(t);
          continue;
        }
        mine.push_back(s);
      }
      for (int round = 0; round < 3; ++round) {
        for (parley_session* s : mine) {
          if (!step(t, s)) failed(t);
        }
      }
      for (parley_session* s : mine) parley_session_close(s);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors) {
    if (!error.empty()) MESSAGE(error);
  }
  CHECK(failures.load() == 0);
}

}  // namespace

TEST_CASE("threads: no send fails for want of room while idle sessions can be spilled") {
  TempDir dir;
  // Each thread's send holds up to two blocks at once; the rest of the budget turns over.
  parley_engine* e = open_engine((dir / "room.db").string(), 10);
  check_rounds_on_threads(e, 4, kSanitizerBuild ? 6 : 30, [](int, parley_session* s) {
    return send(s, "The dog ran", 4) == PARLEY_OK;
  });
  parley_engine_close(e);
}

TEST_CASE("threads: no fork fails for want of room while idle sessions can be spilled") {
  // Forks copy a partly filled last block while other threads' sends take blocks: the block a
  // spill frees for a fork is not lost to a send. A conversation grows to three blocks; each
  // thread holds at most one, and its fork's copy, at once.
  const int forks = kSanitizerBuild ? 2 : 6;
  TempDir dir;
  parley_engine* e = open_engine((dir / "room.db").string(), 12);
  check_rounds_on_threads(e, 4, 6, [&](int t, parley_session* s) {
    if (send(s, "The dog ran", 3) != PARLEY_OK) return false;
    for (int i = 0; t % 2 == 0 && i < forks; ++i) {  // half the threads fork too
      parley_session* fork = nullptr;
      if (parley_session_fork(s, nullptr, &fork) != PARLEY_OK) return false;
      parley_session_close(fork);
    }
    return true;
  });
  parley_engine_close(e);
}

namespace {

// What the warning of a failed spill says.
constexpr const char* kSpillFailed = "cannot spill session";

std::shared_ptr<parley::engine::Engine> engine_on(const std::string& store, const FaultyVfs& vfs,
                                                  uint64_t budget_blocks) {
  parley::engine::EngineOptions o;
  o.model_path = hardening_model();
  o.device = "cpu";
  o.n_threads = 1;
  o.kv_budget_bytes = budget_blocks * kHardeningBlockBytes;
  o.store_path = store;
  o.store_options.vfs = vfs.name();
  return std::make_shared<parley::engine::Engine>(o);
}

std::unique_ptr<parley::engine::Session> session_on(
    const std::shared_ptr<parley::engine::Engine>& e, const std::string& id) {
  parley::engine::SessionOptions o;
  o.id = id;
  return std::make_unique<parley::engine::Session>(e, o);
}

// A greedy turn of `max_tokens`; the status of the Error it threw (ok when none) and its words.
struct Sent {
  parley::Status status = parley::Status::ok;
  std::string message;
};
Sent send_to(parley::engine::Session& s, const std::string& text, uint32_t max_tokens) {
  parley::engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  parley::engine::TurnStats stats;
  try {
    const auto use = s.try_use();
    REQUIRE(use);
    s.send(text, p, nullptr, stats);
  } catch (const parley::Error& e) {
    return {e.status(), e.what()};
  }
  return {};
}

// A message whose turn takes more than `above` tokens and at most `at_most`.
std::string message_for(const parley::engine::Session& s, size_t above, size_t at_most) {
  return message_sized([&](const std::string& text) { return s.count_turn_tokens(text); }, above,
                       at_most);
}

bool holds(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a spill refused as another engine changed the conversation: advice to close it") {
  FaultyVfs vfs("parley-faulty-kv-conflict");
  TempDir dir;
  const std::string store = (dir / "room.db").string();
  auto e = engine_on(store, vfs, 4);  // 64 tokens
  auto idle = session_on(e, "A");
  REQUIRE(send_to(*idle, "Hello there", 4).status == parley::Status::ok);
  {
    auto other = engine_on(store, vfs, 16);
    auto theirs = parley::engine::Session::open(other, "A");
    REQUIRE(send_to(*theirs, "Bye", 2).status == parley::Status::ok);
  }
  auto big = session_on(e, "big");
  const Sent refused = send_to(*big, message_for(*big, 48, 56), 6);
  CHECK(refused.status == parley::Status::out_of_memory);
  CHECK_MESSAGE(holds(refused.message, "changed in the store by another engine"), refused.message);
  CHECK_MESSAGE(holds(refused.message, "close sessions (one another engine changed first)"),
                refused.message);
  CHECK_MESSAGE(!holds(refused.message, "free space"), refused.message);
}

TEST_CASE("a spill the full disk refuses is tried once, and the error names it") {
  FaultyVfs vfs("parley-faulty-kv-room");
  TempDir dir;
  auto e = engine_on((dir / "room.db").string(), vfs, 4);  // 64 tokens
  auto idle = session_on(e, "A");
  REQUIRE(send_to(*idle, "Hello there", 4).status == parley::Status::ok);
  auto big = session_on(e, "big");
  // Its prompt and reply need all four blocks: A's must go, and the store refuses it.
  const std::string message = message_for(*big, 48, 56);
  vfs.fail_writes_after(0, SQLITE_FULL);
  LogCapture warnings;
  const Sent refused = send_to(*big, message, 6);
  // OUT_OF_MEMORY, as for a budget that no spill can help, with the store's reason.
  CHECK(refused.status == parley::Status::out_of_memory);
  CHECK_MESSAGE(holds(refused.message, "spilling session 'A' to the store"), refused.message);
  CHECK_MESSAGE(holds(refused.message, "database or disk is full"), refused.message);
  CHECK_MESSAGE(holds(refused.message, "free space for the store"), refused.message);
  CHECK(warnings.count(kSpillFailed) == 1);
  // The message was not taken: the session is as it was, and A keeps its KV.
  CHECK(big->messages().empty());
  CHECK(big->tokens().empty());
  CHECK_FALSE(idle->spilled());

  vfs.clear();  // room on the disk again: the same send goes through
  const Sent sent = send_to(*big, message, 6);
  CHECK_MESSAGE(sent.status == parley::Status::ok, sent.message);
  CHECK(big->messages().size() == 2);
  CHECK(idle->spilled());
  CHECK(e->store()->load_turns("big").size() == 2);
}

namespace {

// A budget of four blocks: A and B hold one each, and big's message needs three, so one of
// theirs must be spilled. A is the least recently used: the first tried, and its spill fails
// (the disk is full from the start).
struct SpillFailsForRoom {
  explicit SpillFailsForRoom(const char* vfs_name) : vfs(vfs_name) {
    e = engine_on((dir / "room.db").string(), vfs, 4);
    failing = session_on(e, "A");
    REQUIRE(send_to(*failing, "Hi", 2).status == parley::Status::ok);
    other = session_on(e, "B");
    REQUIRE(send_to(*other, "Hi", 2).status == parley::Status::ok);
    big = session_on(e, "big");
    REQUIRE(e->stats().blocks.used == 2);  // a block each
    message = message_for(*big, 32, 40);
    vfs.fail_writes_after(0, SQLITE_FULL);
  }

  FaultyVfs vfs;
  TempDir dir;
  std::shared_ptr<parley::engine::Engine> e;
  std::unique_ptr<parley::engine::Session> failing, other, big;
  std::string message;
};

}  // namespace

TEST_CASE("a session in use is waited for after another's spill failed, which is not retried") {
  LogCapture warnings;
  SpillFailsForRoom room("parley-faulty-kv-busy");
  auto& vfs = room.vfs;
  auto& busy = room.other;
  // B is in use until A's spill has failed; then the disk has room again and B is let go.
  std::mutex holding;
  std::condition_variable held;
  bool tried = false, taken = false;
  std::thread user([&] {
    auto use = busy->try_use();
    {
      std::lock_guard lock(holding);
      tried = true;
      taken = bool(use);
    }
    held.notify_all();
    if (use) warnings.wait_for(kSpillFailed);
    vfs.clear();
  });
  {
    std::unique_lock lock(holding);
    held.wait(lock, [&] { return tried; });
  }
  REQUIRE(taken);
  const Sent sent = send_to(*room.big, room.message, 6);
  user.join();
  CHECK_MESSAGE(sent.status == parley::Status::ok, sent.message);
  CHECK(busy->spilled());
  CHECK_FALSE(room.failing->spilled());  // once refused, it was not tried again for this send
  CHECK(warnings.count(kSpillFailed) == 1);
}

TEST_CASE("a session closing elsewhere is waited for after another's spill failed") {
  LogCapture warnings;
  SpillFailsForRoom room("parley-faulty-kv-closing");
  auto& e = room.e;
  auto& closing = room.other;
  // B closes on a thread of its own, held before its spill until A's spill has failed; then
  // the disk has room again and B's close stores it and lets its block go.
  auto spill_held = closing->try_use_idle();
  REQUIRE(spill_held);
  std::thread closer([s = std::move(closing)]() mutable { s.reset(); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (e->stats().sessions_idle > 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Sent sent;
  std::thread sender([&] { sent = send_to(*room.big, room.message, 6); });
  warnings.wait_for(kSpillFailed);
  room.vfs.clear();
  spill_held.unlock();
  sender.join();
  closer.join();
  CHECK_MESSAGE(sent.status == parley::Status::ok, sent.message);
  CHECK(room.big->messages().size() == 2);
  CHECK_FALSE(room.failing->spilled());  // once refused, it was not tried again for this send
  CHECK(warnings.count(kSpillFailed) == 1);
  CHECK(e->store()->load_turns("B").size() == 2);
}

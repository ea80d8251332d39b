// Eight threads drive their own sessions through the C API at once, under a KV budget that
// makes them spill each other, with the janitor spilling idle ones, suspends, and interrupts
// arriving from another thread. No caller may see BUSY or a storage error for its own
// session, every acknowledged turn must be in the store, and every conversation must equal
// the same turns replayed alone.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hardening_model.h"
#include "parley.h"
#include "replay.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

constexpr int kThreads = 8;
constexpr int kSessionsPerThread = 3;
constexpr int kTurns = 8;
constexpr uint32_t kReplyTokens = 16;
// A conversation ends near 8 x (3 + 16) tokens = 10 blocks; all 24 would need about 240. The
// budget holds the 8 in use with room to spare, so a send never runs short while others spill.
constexpr uint64_t kBudgetBlocks = 128;
constexpr uint32_t kIdleSpillMs = 10;

// One session and what its driver has seen. The mutex orders an interrupt against the start
// of the next turn: an interrupt is only sent while a turn is streaming, so it stops that
// turn after at least one token, or arrives after it and is reset by the next send. It is
// aimed at turns with tokens still to come (not at the commit after the last one), so that
// most interrupts stop something.
struct Slot {
  parley_session* s = nullptr;
  std::mutex turn_mutex;
  bool streaming = false;            // guarded by turn_mutex
  std::atomic<uint32_t> pieces{0};   // pieces streamed in the current turn
  std::vector<TurnRecord> turns;     // the driver thread's own
  int restored = 0;
};

int count_piece(const char*, size_t, void* user) {
  static_cast<Slot*>(user)->pieces.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

std::string turn_text(int slot, int turn) {
  // Distinct words per conversation, so sessions share no prefix blocks by accident.
  static const char* words[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
  return std::string(words[slot % 12]) + " " + words[(slot / 12 + turn) % 12] + " " +
         words[turn % 12];
}

// Runs one thread's sessions turn by turn; records failures as strings (doctest's assertions
// are not used off the main thread).
void drive(std::vector<Slot*> mine, int first_index, std::vector<std::string>& errors) {
  for (int turn = 0; turn < kTurns; ++turn) {
    for (size_t k = 0; k < mine.size(); ++k) {
      Slot& slot = *mine[k];
      TurnRecord rec{turn_text(first_index + int(k), turn), kReplyTokens, 0, false};
      {
        std::lock_guard lock(slot.turn_mutex);
        slot.pieces = 0;
        slot.streaming = true;
      }
      const auto g = greedy_options(kReplyTokens);
      parley_turn_stats stats;
      stats.struct_size = sizeof stats;
      const parley_status st =
          parley_session_send(slot.s, rec.text.c_str(), &g, count_piece, &slot, &stats);
      const std::string message = parley_last_error();
      {
        std::lock_guard lock(slot.turn_mutex);
        slot.streaming = false;
      }
      if (st != PARLEY_OK && st != PARLEY_E_CANCELLED) {
        errors.push_back(std::string("send: ") + parley_status_name(st) + ": " + message);
        return;
      }
      rec.generated = stats.generated_tokens;
      rec.cancelled = st == PARLEY_E_CANCELLED;
      if (rec.cancelled && rec.generated == 0) errors.push_back("an interrupt stopped a turn before its first token");
      slot.restored += stats.kv_source == PARLEY_KV_SOURCE_RESTORED;
      slot.turns.push_back(rec);
      if ((turn + int(k)) % 3 == 2) {
        if (const parley_status s2 = parley_session_suspend(slot.s)) {
          errors.push_back(std::string("suspend: ") + parley_status_name(s2) + ": " + parley_last_error());
          return;
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("eight threads with spills, the janitor and interrupts lose nothing and race nothing") {
  TempDir dir;
  const std::string db = (dir / "threads.db").string();
  const std::string& model = hardening_model();
  const auto eo = engine_options(model, db, kBudgetBlocks * kHardeningBlockBytes, kIdleSpillMs, 2);
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&eo, &e) == PARLEY_OK);

  std::vector<Slot> slots(kThreads * kSessionsPerThread);
  for (size_t i = 0; i < slots.size(); ++i) {
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = "raw";
    const std::string id = "t" + std::to_string(i);
    so.id = id.c_str();
    REQUIRE(parley_session_create(e, &so, &slots[i].s) == PARLEY_OK);
  }

  std::vector<std::vector<std::string>> errors(kThreads);
  std::atomic<bool> done{false};
  std::atomic<int> interrupts{0};
  std::mutex side_mutex;
  std::vector<std::string> side_errors;  // guarded by side_mutex
  auto side_error = [&](const char* what) {
    std::lock_guard lock(side_mutex);
    side_errors.push_back(what);
  };
  // Stops streaming turns at random moments, of every other session: the turns of the rest
  // always complete, however slow the machine (or the sanitizer) is.
  std::thread interrupter([&] {
    std::mt19937 rng(7);
    while (!done.load()) {
      Slot& slot = slots[2 * (rng() % (slots.size() / 2))];
      {
        std::lock_guard lock(slot.turn_mutex);
        const uint32_t pieces = slot.pieces.load();
        if (slot.streaming && pieces >= 1 && pieces + 2 <= kReplyTokens) {
          if (parley_session_interrupt(slot.s) != PARLEY_OK) side_error("interrupt failed");
          interrupts.fetch_add(1);
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1000));
    }
  });
  // Engine-wide reads from yet another thread while everything moves.
  std::thread observer([&] {
    while (!done.load()) {
      parley_engine_stats st;
      st.struct_size = sizeof st;
      if (parley_engine_get_stats(e, &st) != PARLEY_OK) side_error("stats failed");
      size_t needed = 0;
      if (parley_store_list_sessions(e, nullptr, 0, &needed) != PARLEY_OK) side_error("list failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> drivers;
  for (int t = 0; t < kThreads; ++t) {
    std::vector<Slot*> mine;
    for (int k = 0; k < kSessionsPerThread; ++k) mine.push_back(&slots[size_t(t * kSessionsPerThread + k)]);
    drivers.emplace_back(drive, mine, t * kSessionsPerThread, std::ref(errors[size_t(t)]));
  }
  for (auto& d : drivers) d.join();
  done = true;
  interrupter.join();
  observer.join();

  for (const auto& list : errors) {
    for (const auto& err : list) FAIL_CHECK(err);
  }
  for (const auto& err : side_errors) FAIL_CHECK(err);
  int cancelled = 0, restored = 0;
  for (const Slot& slot : slots) {
    REQUIRE(slot.turns.size() == size_t(kTurns));
    for (const TurnRecord& t : slot.turns) cancelled += t.cancelled;
    restored += slot.restored;
  }
  MESSAGE(interrupts.load() << " interrupts sent, " << cancelled << " turns stopped by one, "
                            << restored << " turns restored from the store");
  CHECK(cancelled > 0);
  CHECK(restored > 0);

  // What each session holds equals its turns replayed alone, with nothing under pressure.
  const auto ro = engine_options(model, "");
  parley_engine* reference = nullptr;
  REQUIRE(parley_engine_open(&ro, &reference) == PARLEY_OK);
  std::vector<Transcript> expected;
  for (size_t i = 0; i < slots.size(); ++i) {
    CAPTURE(i);
    expected.push_back(replay(reference, slots[i].turns));
    Transcript live;
    REQUIRE(read_transcript(slots[i].s, live) == PARLEY_OK);
    CHECK(live == expected.back());
    parley_session_close(slots[i].s);
  }
  parley_engine_close(reference);
  parley_engine_close(e);

  // Every acknowledged turn is in the store, and a new engine resumes each conversation.
  const auto again = engine_options(model, db);
  REQUIRE(parley_engine_open(&again, &e) == PARLEY_OK);
  for (size_t i = 0; i < slots.size(); ++i) {
    CAPTURE(i);
    parley_session* s = nullptr;
    REQUIRE(parley_session_open(e, ("t" + std::to_string(i)).c_str(), &s) == PARLEY_OK);
    Transcript stored;
    REQUIRE(read_transcript(s, stored) == PARLEY_OK);
    CHECK(stored == expected[i]);
    parley_session_close(s);
  }
  parley_engine_close(e);
}

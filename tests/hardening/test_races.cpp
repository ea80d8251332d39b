// Calls on one conversation that race from two threads, each raced many times (a tenth as
// many under a sanitizer) with the second thread a little later or earlier each time: an open against a delete of the same stored
// conversation, a close against a send just starting, and a spill against the delete of
// another session that shares its prefix blocks. Whatever the order, the outcome is one the
// header names.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hardening_model.h"
#include "parley.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

// Rounds of each race; a sanitizer build, many times slower, runs a tenth of them.
constexpr int rounds(int n) { return kSanitizerBuild ? n / 10 : n; }

void spin(int steps) {
  volatile int sink = 0;  // a loop the compiler keeps
  for (int i = 0; i < steps; ++i) sink = i;
  (void)sink;
}

// Runs `first` on this thread and `second` on another, the two released together; the second
// waits first for a number of spin steps drawn from `rng` (on a log scale from 1 to 10,000,
// as how long a step takes depends on the machine), so that over many runs it lands before,
// during and after the first call's start.
template <class First, class Second>
void race(std::mt19937& rng, double log_min, double log_max, First&& first, Second&& second) {
  const int second_spin =
      int(std::exp(std::uniform_real_distribution<double>(log_min, log_max)(rng)));
  std::atomic<bool> ready{false}, go{false};
  std::thread other([&] {
    ready.store(true);
    while (!go.load()) {
    }
    spin(second_spin);
    second();
  });
  while (!ready.load()) {
  }
  go.store(true);
  first();
  other.join();
}

// A CPU engine on the hardening model; store "" = none.
parley_engine* open_engine(const std::string& store) {
  const parley_engine_options eo = engine_options(hardening_model(), store);
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

parley_session* create_session(parley_engine* e, const char* id, const char* system_prompt,
                               const char* cache_scope) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.id = id;
  o.system_prompt = system_prompt;
  o.cache_scope = cache_scope;
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &o, &s) == PARLEY_OK, parley_last_error());
  return s;
}

void send(parley_session* s, const char* text, uint32_t max_tokens) {
  const parley_generate_options g = greedy_options(max_tokens);
  REQUIRE_MESSAGE(parley_session_send(s, text, &g, nullptr, nullptr, nullptr) == PARLEY_OK,
                  parley_last_error());
}

}  // namespace

TEST_CASE("an open and a delete of one stored conversation: one of them wins") {
  TempDir dir;
  const std::string store = (dir / "races.db").string();
  parley_engine* e = open_engine(store);
  std::mt19937 rng(7);
  int opened = 0, deleted = 0;
  for (int i = 0; i < rounds(60); ++i) {
    CAPTURE(i);
    const std::string id = "slot" + std::to_string(i);
    parley_session* s = create_session(e, id.c_str(), "A story.", nullptr);
    for (int turn = 0; turn < 3; ++turn) send(s, "Tell me more about the dog.", 8);
    parley_session_close(s);

    parley_session* reopened = nullptr;
    parley_status open = -1, del = -1;
    const auto open_it = [&] { open = parley_session_open(e, id.c_str(), &reopened); };
    const auto delete_it = [&] { del = parley_session_delete(e, id.c_str()); };
    if (i % 2 == 0) {
      race(rng, 0, 9.2, open_it, delete_it);
    } else {
      race(rng, 0, 9.2, delete_it, open_it);
    }
    parley_stored_session_info info;
    info.struct_size = sizeof info;
    const parley_status stored = parley_store_get_session_info(e, id.c_str(), &info);
    if (open == PARLEY_OK) {
      ++opened;
      CHECK(del == PARLEY_E_INVALID_ARGUMENT);  // "is open; close it before deleting it"
      CHECK(stored == PARLEY_OK);
      // The open conversation is the stored one: its next turn is committed there.
      const parley_generate_options g = greedy_options(4);
      CHECK(parley_session_send(reopened, "And then?", &g, nullptr, nullptr, nullptr) ==
            PARLEY_OK);
      parley_session_close(reopened);
    } else {
      ++deleted;
      CHECK(open == PARLEY_E_NOT_FOUND);
      CHECK(del == PARLEY_OK);
      CHECK(stored == PARLEY_E_NOT_FOUND);
    }
  }
  MESSAGE(opened << " opens and " << deleted << " deletes won");
  parley_engine_close(e);
}

TEST_CASE("a close as a send starts on another thread stops the send, however early") {
  parley_engine* e = open_engine("");
  std::mt19937 rng(11);
  int cancelled = 0;
  for (int i = 0; i < rounds(300); ++i) {
    CAPTURE(i);
    parley_session* s = create_session(e, nullptr, nullptr, nullptr);
    parley_generate_options g = greedy_options(0);  // to the end of the context
    g.ignore_eos = 1;
    // Stop strings make the send's start (reading its options) long enough to be hit.
    const std::vector<std::string> stops(16, std::string(200, 'q'));
    std::vector<const char*> stop_ptrs;
    for (const auto& stop : stops) stop_ptrs.push_back(stop.c_str());
    g.stop = stop_ptrs.data();
    g.n_stop = stop_ptrs.size();
    parley_status sent = -1;
    // The send either finds the handle closed (MISUSE) or stops as interrupted; never does it
    // run on to the end of the context with no one left to stop it.
    race(
        rng, 0, 9.2, [&] { sent = parley_session_send(s, "Once", &g, nullptr, nullptr, nullptr); },
        [&] { parley_session_close(s); });
    CHECK_MESSAGE((sent == PARLEY_E_CANCELLED || sent == PARLEY_E_MISUSE),
                  parley_status_name(sent));
    if (sent == PARLEY_E_CANCELLED) ++cancelled;
  }
  MESSAGE(cancelled << " sends were under way when closed");
  parley_engine_close(e);
}

TEST_CASE("a spill while another session sharing its prefix blocks is deleted succeeds") {
  TempDir dir;
  const std::string store = (dir / "races.db").string();
  parley_engine* e = open_engine(store);
  std::string system_prompt;  // several KV blocks long
  for (int i = 0; i < 8; ++i) system_prompt += "Once upon a time there was a little girl. ";
  std::mt19937 rng(13);
  for (int i = 0; i < rounds(200); ++i) {
    CAPTURE(i);
    // A cache scope of its own: the blocks the store has from earlier rounds are not these.
    const std::string scope = "round" + std::to_string(i);
    const std::string kept = "kept" + std::to_string(i), gone = "gone" + std::to_string(i);
    parley_session* a = create_session(e, kept.c_str(), system_prompt.c_str(), scope.c_str());
    send(a, "Hello", 4);
    parley_session* b = create_session(e, gone.c_str(), system_prompt.c_str(), scope.c_str());
    send(b, "Hi", 4);
    // b's prefix blocks are in the store, and a's KV, the same blocks, is in memory.
    REQUIRE(parley_session_suspend(b) == PARLEY_OK);
    parley_session_close(b);
    parley_status suspended = -1, del = -1;
    race(
        rng, 7, 14, [&] { suspended = parley_session_suspend(a); },
        [&] { del = parley_session_delete(e, gone.c_str()); });
    CHECK_MESSAGE(suspended == PARLEY_OK, parley_last_error());
    CHECK(del == PARLEY_OK);
    // a's KV was stored: the next turn restores it.
    parley_turn_stats stats;
    stats.struct_size = sizeof stats;
    const parley_generate_options g = greedy_options(2);
    REQUIRE(parley_session_send(a, "Bye", &g, nullptr, nullptr, &stats) == PARLEY_OK);
    CHECK(stats.kv_source == PARLEY_KV_SOURCE_RESTORED);
    parley_session_close(a);
  }
  parley_engine_close(e);
}

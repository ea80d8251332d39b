// Threads and callbacks: a second user of a busy session gets BUSY, a callback calling back
// into its own session gets BUSY, interrupt works from any thread, closing during a send stops
// it safely, and sessions on different threads both finish.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "abi_fixture.h"
#include "parley.h"
#include "support/shared_assets.h"

using namespace parley::test;
using namespace std::chrono_literals;

namespace {

// Blocks a running send inside its first callback until the test releases it.
struct Gate {
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::string streamed;

  static int callback(const char* utf8, size_t len, void* user) {
    auto* g = static_cast<Gate*>(user);
    g->streamed.append(utf8, len);
    g->inside.store(true);
    while (!g->release.load()) std::this_thread::sleep_for(1ms);
    return 0;
  }
  void wait_inside() const {
    while (!inside.load()) std::this_thread::sleep_for(1ms);
  }
};

}  // namespace

TEST_CASE("a second call on a busy session gets BUSY, and nothing is corrupted") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(5);
  Gate gate;
  parley_status first = -1;
  std::thread t([&] { first = parley_session_send(s, "a", &g, Gate::callback, &gate, nullptr); });
  gate.wait_inside();
  CHECK(parley_session_send(s, "b", &g, nullptr, nullptr, nullptr) == PARLEY_E_BUSY);
  size_t n = 0;
  CHECK(parley_session_get_tokens(s, nullptr, 0, &n) == PARLEY_E_BUSY);
  gate.release.store(true);
  t.join();
  CHECK(first == PARLEY_OK);

  // The conversation is exactly one turn of 5 tokens on top of the prompt.
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  CHECK(info.n_turns == 2);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  REQUIRE(parley_session_get_turn(s, 1, &turn) == PARLEY_OK);
  CHECK(turn.n_tokens == 5);
  CHECK(std::string(turn.text) == gate.streamed);
}

TEST_CASE("calling back into the same session from its callback returns BUSY") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  struct Probe {
    parley_session* s;
    parley_status send = -1, info = -1;
  } probe{s};
  auto cb = [](const char*, size_t, void* user) {
    auto* p = static_cast<Probe*>(user);
    auto g = greedy_options(1);
    p->send = parley_session_send(p->s, "x", &g, nullptr, nullptr, nullptr);
    parley_session_info info;
    info.struct_size = sizeof info;
    p->info = parley_session_get_info(p->s, &info);
    return 0;
  };
  auto g = greedy_options(2);
  CHECK(parley_session_send(s, "a", &g, cb, &probe, nullptr) == PARLEY_OK);
  CHECK(probe.send == PARLEY_E_BUSY);
  CHECK(probe.info == PARLEY_E_BUSY);
  CHECK(parley_session_interrupt(s) == PARLEY_OK);  // nothing runs: a no-op
}

TEST_CASE("interrupt from another thread stops the send and keeps the partial reply") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(40);
  Gate gate;
  parley_status status = -1;
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  std::thread t([&] { status = parley_session_send(s, "a", &g, Gate::callback, &gate, &stats); });
  gate.wait_inside();
  CHECK(parley_session_interrupt(s) == PARLEY_OK);
  gate.release.store(true);
  t.join();
  CHECK(status == PARLEY_E_CANCELLED);
  CHECK(stats.generated_tokens >= 1);
  CHECK(stats.generated_tokens < 40);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  REQUIRE(parley_session_get_turn(s, 1, &turn) == PARLEY_OK);
  CHECK(turn.role == PARLEY_ROLE_ASSISTANT);
  CHECK(std::string(turn.text) == gate.streamed);
  // The conversation goes on after a stop.
  g.max_tokens = 2;
  CHECK(parley_session_send(s, "b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
}

TEST_CASE("a callback that returns non-zero stops the reply") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(30);
  int calls = 0;
  auto stop_at_once = [](const char*, size_t, void* user) {
    ++*static_cast<int*>(user);
    return 1;
  };
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  CHECK(parley_session_send(s, "a", &g, stop_at_once, &calls, &stats) == PARLEY_E_CANCELLED);
  CHECK(calls == 1);
  CHECK(stats.generated_tokens < 30);
}

TEST_CASE("closing a session while its send runs stops the send; the partial reply is kept") {
  TempDir dir;
  const std::string store = (dir / "store.db").string();
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = tiny_chat_model().c_str();
  o.store_path = store.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&o, &e) == PARLEY_OK, parley_last_error());
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = "closed-while-sending";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  auto g = greedy_options(40);
  Gate gate;
  parley_status status = -1;
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  std::thread t([&] { status = parley_session_send(s, "a", &g, Gate::callback, &gate, &stats); });
  gate.wait_inside();
  parley_session_close(s);
  // No one could stop the send any more: the close did.
  CHECK(parley_session_interrupt(s) == PARLEY_E_MISUSE);
  gate.release.store(true);
  t.join();
  CHECK(status == PARLEY_E_CANCELLED);
  CHECK(stats.generated_tokens < 40);

  // The turn, cut where the close came, is in the store.
  REQUIRE(parley_session_open(e, "closed-while-sending", &s) == PARLEY_OK);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  REQUIRE(parley_session_get_turn(s, 1, &turn) == PARLEY_OK);
  CHECK(turn.role == PARLEY_ROLE_ASSISTANT);
  CHECK(std::string(turn.text) == gate.streamed);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("sessions on different threads both finish with the same result as alone") {
  EngineHandle e(tiny_chat_model());
  auto g = greedy_options(12);
  auto run = [&](std::vector<int32_t>& out) {
    parley_session* s = nullptr;
    CHECK(parley_session_create(e, nullptr, &s) == PARLEY_OK);
    CHECK(parley_session_send(s, "a b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
    size_t n = 0;
    CHECK(parley_session_get_tokens(s, nullptr, 0, &n) == PARLEY_OK);
    out.resize(n);
    CHECK(parley_session_get_tokens(s, out.data(), n, &n) == PARLEY_OK);
    parley_session_close(s);
  };
  std::vector<int32_t> alone, x, y;
  run(alone);
  std::thread tx([&] { run(x); });
  std::thread ty([&] { run(y); });
  tx.join();
  ty.join();
  CHECK(x == alone);
  CHECK(y == alone);
  // Three replies of 12 tokens each took 11 decode tokens (prefill yields the first, the last
  // is not fed back), whether the two at once shared steps or not.
  parley_engine_stats stats;
  stats.struct_size = sizeof stats;
  REQUIRE(parley_engine_get_stats(e, &stats) == PARLEY_OK);
  CHECK(stats.decode_tokens == 3 * 11);
  CHECK(stats.decode_steps >= 2 * 11);
  CHECK(stats.decode_steps <= stats.decode_tokens);
}

TEST_CASE("a session's send runs while another session's send is in progress") {
  EngineHandle e(tiny_chat_model());
  SessionHandle a(e);
  SessionHandle b(e);
  auto g = greedy_options(5);
  Gate gate;
  parley_status first = -1;
  std::thread t([&] { first = parley_session_send(a, "a", &g, Gate::callback, &gate, nullptr); });
  gate.wait_inside();  // a's send is in the middle of its reply
  // b runs a whole turn meanwhile: nothing engine-wide is held across a send.
  CHECK(parley_session_send(b, "b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  gate.release.store(true);
  t.join();
  CHECK(first == PARLEY_OK);
}

// A session closing on one thread while another thread opens, deletes or looks up its id in
// the store: the other call waits until the close has stored its spill. The reopened session
// gets the KV the close stored back, and the close's spill finds nothing changed or deleted
// under it (no warning). The close is held before its spill by holding the session as the
// engine's own spills do (try_use_idle), and let go once the other call has returned or waits.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "hardening_model.h"
#include "support/log_capture.h"
#include "support/shared_assets.h"

using namespace parley::test;
using parley::engine::Engine;
using parley::engine::KvSource;
using parley::engine::Session;

namespace {

std::shared_ptr<Engine> engine_on(const std::string& store) {
  parley::engine::EngineOptions o;
  o.model_path = hardening_model();
  o.device = "cpu";
  o.n_threads = 1;
  o.store_path = store;
  return std::make_shared<Engine>(o);
}

parley::engine::TurnStats send_to(Session& s, const std::string& text) {
  parley::engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.max_tokens = 6;
  p.ignore_eos = true;
  parley::engine::TurnStats stats;
  const auto use = s.try_use();
  if (!use) throw std::runtime_error("the session is busy");
  s.send(text, p, nullptr, stats);
  return stats;
}

std::unique_ptr<Session> session_with_a_turn(const std::shared_ptr<Engine>& e,
                                             const std::string& id) {
  parley::engine::SessionOptions o;
  o.id = id;
  auto s = std::make_unique<Session>(e, o);
  send_to(*s, "Once upon a time");
  return s;
}

// Polls `done`; false after a minute (a failing test then ends instead of hanging).
bool wait_for(const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

size_t live_sessions(const Engine& e) {
  const auto st = e.stats();
  return st.sessions_active + st.sessions_idle + st.sessions_spilled;
}

// Closes `session` on a thread of its own, held just before its spill, and runs `other` on a
// second thread meanwhile; the spill goes on once `other` has returned or waits for the close.
void close_while(std::unique_ptr<Session> session, Engine& engine,
                 const std::function<void()>& other) {
  auto spill_held = session->try_use_idle();
  REQUIRE(spill_held);
  std::thread closer([s = std::move(session)]() mutable { s.reset(); });
  const bool closing = wait_for([&] { return live_sessions(engine) == 0; });
  std::atomic<bool> other_returned{false};
  std::thread other_thread([&] {
    other();
    other_returned = true;
  });
  const bool other_there =
      closing && wait_for([&] { return other_returned || engine.calls_waiting_for_close() > 0; });
  spill_held.unlock();
  closer.join();
  other_thread.join();
  REQUIRE(closing);
  REQUIRE(other_there);
}

}  // namespace

TEST_CASE("reopening a session another thread is closing gets the KV its close stores") {
  TempDir dir;
  auto e = engine_on((dir / "close.db").string());
  LogCapture warnings;
  std::unique_ptr<Session> reopened;
  KvSource source = KvSource::fresh;
  std::string error;
  close_while(session_with_a_turn(e, "r1"), *e, [&] {
    try {
      reopened = Session::open(e, "r1");
      source = send_to(*reopened, " more").kv_source;
    } catch (const std::exception& x) {
      error = x.what();
    }
  });
  CHECK(error == "");
  CHECK(source == KvSource::restored);
  reopened.reset();
  CHECK(warnings.text() == "");
  CHECK(e->stored_session_info("r1").summary.n_turns == 4);
}

TEST_CASE("deleting a session another thread is closing deletes it after the close") {
  TempDir dir;
  auto e = engine_on((dir / "close.db").string());
  LogCapture warnings;
  std::string error;
  close_while(session_with_a_turn(e, "d1"), *e, [&] {
    try {
      e->delete_stored_session("d1");
    } catch (const std::exception& x) {
      error = x.what();
    }
  });
  CHECK(error == "");
  CHECK(warnings.text() == "");
  CHECK_FALSE(e->store()->load_session("d1").has_value());
}

TEST_CASE("a stored session's info, asked while it closes, counts what the close stores") {
  TempDir dir;
  auto e = engine_on((dir / "close.db").string());
  LogCapture warnings;
  Engine::StoredSessionInfo info;
  std::string error;
  close_while(session_with_a_turn(e, "i1"), *e, [&] {
    try {
      info = e->stored_session_info("i1");
    } catch (const std::exception& x) {
      error = x.what();
    }
  });
  CHECK(error == "");
  CHECK(info.summary.kv_bytes > 0);
  CHECK_FALSE(info.open);
  CHECK(warnings.text() == "");
}

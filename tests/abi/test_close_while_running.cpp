// Closing a session while its send still runs: the close begins at once, so an open, a delete
// or a look at the stored session of its id on another thread waits until the send has
// returned and the close has stored the session, and then finds the kept turn. Calls made on
// the send's own thread (its callback) do not wait for a close that waits for them: they find
// the session still being closed, and are refused saying so.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "abi_fixture.h"
#include "parley.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kId = "story";

// Long enough for a call that does not wait to have returned; a waiting one never returns
// before the send is let go, so only a failing run spends it whole.
constexpr auto kReturnGrace = 300ms;

// The send's callback: keeps the first piece, runs `inside` (on the send's thread), then
// holds the send until the test lets it go, and runs `after_release` there.
struct HeldSend {
  std::function<void()> inside = [] {};
  std::function<void()> after_release = [] {};
  std::string streamed;
  std::atomic<bool> held{false};
  std::atomic<bool> release{false};

  static int callback(const char* utf8, size_t len, void* user) {
    auto* h = static_cast<HeldSend*>(user);
    h->streamed.append(utf8, len);
    if (h->held.load()) return 0;  // the close stops the send at its next check anyway
    h->inside();
    h->held.store(true);
    while (!h->release.load()) std::this_thread::sleep_for(1ms);
    h->after_release();
    return 0;
  }
  void wait_held() const {
    while (!held.load()) std::this_thread::sleep_for(1ms);
  }
};

// Runs `call` on a thread of its own while the send is held; lets the send go once the call
// has returned or kReturnGrace has passed. Returns whether the call returned before that.
bool returned_while_held(HeldSend& send, const std::function<void()>& call) {
  std::atomic<bool> returned{false};
  std::thread other([&] {
    call();
    returned.store(true);
  });
  const auto give_up = std::chrono::steady_clock::now() + kReturnGrace;
  while (!returned.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  const bool early = returned.load();
  send.release.store(true);
  other.join();
  return early;
}

// An engine with a store and the session kId, whose greedy send runs on a thread of its own
// and is held in its first callback.
struct SendingSession {
  TempDir dir;
  parley_engine* e = open_engine_with_store(tiny_chat_model(), (dir / "close.db").string());
  parley_session* s = create_raw_session(e, kId);
  HeldSend send;
  parley_status send_status = -1;
  std::thread sender;

  void start() {
    sender = std::thread([this] {
      const auto g = greedy_options(40);
      send_status = parley_session_send(s, "Once upon a time", &g, HeldSend::callback, &send,
                                        nullptr);
    });
    send.wait_held();
  }
  ~SendingSession() {
    send.release.store(true);
    if (sender.joinable()) sender.join();
    parley_engine_close(e);
  }
};

// parley_session_open of kId on another thread while the send is held.
struct OpenElsewhere {
  bool early = false;  // returned before the send was let go
  parley_status status = -1;
  std::string error;
  parley_session* session = nullptr;
};
OpenElsewhere open_while_held(SendingSession& run) {
  OpenElsewhere r;
  r.early = returned_while_held(run.send, [&] {
    r.status = parley_session_open(run.e, kId, &r.session);
    if (r.status != PARLEY_OK) r.error = parley_last_error();
  });
  return r;
}

uint32_t stored_turns(parley_engine* e) {
  parley_stored_session_info info;
  info.struct_size = sizeof info;
  REQUIRE_MESSAGE(parley_store_get_session_info(e, kId, &info) == PARLEY_OK, parley_last_error());
  return info.n_turns;
}

}  // namespace

TEST_CASE("an open right after closing a sending session waits and gets the kept turn") {
  SendingSession run;
  // The send's own thread does not wait for the close that waits for it: open there finds
  // the session still open.
  parley_status open_on_send_thread = -1;
  run.send.after_release = [&] {
    parley_session* again = nullptr;
    open_on_send_thread = parley_session_open(run.e, kId, &again);
    parley_session_close(again);
  };
  run.start();
  parley_session_close(run.s);
  const OpenElsewhere opened = open_while_held(run);
  parley_session* again = opened.session;
  run.sender.join();
  CHECK_FALSE(opened.early);
  CHECK_MESSAGE(opened.status == PARLEY_OK, opened.error);
  CHECK(open_on_send_thread == PARLEY_E_INVALID_ARGUMENT);
  CHECK(run.send_status == PARLEY_E_CANCELLED);
  REQUIRE(again != nullptr);
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(again, &info) == PARLEY_OK);
  CHECK(info.n_turns == 2);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  REQUIRE(parley_session_get_turn(again, 1, &turn) == PARLEY_OK);
  CHECK(turn.role == PARLEY_ROLE_ASSISTANT);
  CHECK(std::string(turn.text) == run.send.streamed);
  parley_session_close(again);
}

TEST_CASE("a delete right after closing a sending session waits and deletes it") {
  SendingSession run;
  run.start();
  parley_session_close(run.s);
  parley_status status = -1;
  std::string error;
  const bool early = returned_while_held(run.send, [&] {
    status = parley_session_delete(run.e, kId);
    if (status != PARLEY_OK) error = parley_last_error();
  });
  run.sender.join();
  CHECK_FALSE(early);
  CHECK_MESSAGE(status == PARLEY_OK, error);
  parley_session* again = nullptr;
  CHECK(parley_session_open(run.e, kId, &again) == PARLEY_E_NOT_FOUND);
}

TEST_CASE("stored info right after closing a sending session waits for the stored turn") {
  SendingSession run;
  run.start();
  parley_session_close(run.s);
  parley_status status = -1;
  parley_stored_session_info info{};
  info.struct_size = sizeof info;
  const bool early = returned_while_held(
      run.send, [&] { status = parley_store_get_session_info(run.e, kId, &info); });
  run.sender.join();
  CHECK_FALSE(early);
  REQUIRE(status == PARLEY_OK);
  CHECK(info.is_open == 0);
  CHECK(info.n_turns == 2);
  CHECK(info.kv_bytes_stored > 0);  // the close's spill, not only the send's commit
}

TEST_CASE("a close from the send's own callback: another thread's open waits for it") {
  SendingSession run;
  parley_status open_here = -1, delete_here = -1, create_here = -1, info_here = -1;
  std::string open_error, delete_error, create_error;
  parley_stored_session_info seen_here{};
  seen_here.struct_size = sizeof seen_here;
  run.send.inside = [&] {
    parley_session_close(run.s);
    // On the thread that runs the send: nothing waits, and the session is still open here.
    // Each refusal says why, rather than send the caller from open to create and back.
    parley_session* again = nullptr;
    open_here = parley_session_open(run.e, kId, &again);
    open_error = parley_last_error();
    parley_session_close(again);
    delete_here = parley_session_delete(run.e, kId);
    delete_error = parley_last_error();
    parley_session_options o;
    parley_session_options_init(&o);
    o.id = kId;
    create_here = parley_session_create(run.e, &o, &again);
    create_error = parley_last_error();
    parley_session_close(again);
    info_here = parley_store_get_session_info(run.e, kId, &seen_here);
  };
  run.start();
  const std::string closing_here = "is still being closed: a call of its own under way on this "
                                   "thread (this callback's) holds it";
  CHECK(open_here == PARLEY_E_INVALID_ARGUMENT);
  CHECK_MESSAGE(open_error.find(closing_here) != std::string::npos, open_error);
  CHECK(delete_here == PARLEY_E_INVALID_ARGUMENT);
  CHECK_MESSAGE(delete_error.find(closing_here) != std::string::npos, delete_error);
  CHECK(create_here == PARLEY_E_INVALID_ARGUMENT);
  CHECK_MESSAGE(create_error.find(closing_here) != std::string::npos, create_error);
  CHECK(info_here == PARLEY_OK);
  CHECK(seen_here.is_open == 1);
  const OpenElsewhere opened = open_while_held(run);
  parley_session* again = opened.session;
  run.sender.join();
  CHECK_FALSE(opened.early);
  CHECK_MESSAGE(opened.status == PARLEY_OK, opened.error);
  CHECK(run.send_status == PARLEY_E_CANCELLED);
  REQUIRE(again != nullptr);
  parley_turn turn;
  turn.struct_size = sizeof turn;
  REQUIRE(parley_session_get_turn(again, 1, &turn) == PARLEY_OK);
  CHECK(std::string(turn.text) == run.send.streamed);
  parley_session_close(again);
  CHECK(stored_turns(run.e) == 2);
}

TEST_CASE("an engine closed during a send spills the others; the sending one at its close") {
  SendingSession run;
  parley_session* idle = create_raw_session(run.e, "idle");
  const auto g = greedy_options(4);
  REQUIRE(parley_session_send(idle, "Hello", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  run.start();
  parley_engine_close(run.e);  // does not wait for the send
  run.e = nullptr;             // (a closed handle is kept nowhere)
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(idle, &info) == PARLEY_OK);
  CHECK(info.state == PARLEY_SESSION_SPILLED);
  run.send.release.store(true);
  run.sender.join();
  CHECK(run.send_status == PARLEY_OK);
  REQUIRE(parley_session_get_info(run.s, &info) == PARLEY_OK);
  CHECK(info.state != PARLEY_SESSION_SPILLED);  // in the send's call as the engine closed
  CHECK(info.kv_bytes_resident > 0);
  parley_session_close(run.s);  // spills it
  parley_session_close(idle);

  parley_engine* reopened =
      open_engine_with_store(tiny_chat_model(), (run.dir / "close.db").string());
  parley_stored_session_info stored;
  stored.struct_size = sizeof stored;
  REQUIRE(parley_store_get_session_info(reopened, kId, &stored) == PARLEY_OK);
  CHECK(stored.n_turns == 2);
  CHECK(stored.kv_bytes_stored > 0);
  parley_engine_close(reopened);
}

TEST_CASE("without a store, a session closed from its callback leaves its id free at once") {
  parley_engine* e = open_engine(tiny_chat_model(), PARLEY_KV_DEFAULT);
  parley_session* s = create_raw_session(e, kId);
  struct Inside {
    parley_engine* e;
    parley_session* s;
    parley_status created = -1;
    parley_session* again = nullptr;
  } inside{e, s};
  const auto g = greedy_options(8);
  const parley_status sent = parley_session_send(
      s, "Once upon a time", &g,
      [](const char*, size_t, void* user) {
        auto* in = static_cast<Inside*>(user);
        if (in->created != -1) return 0;
        parley_session_close(in->s);
        parley_session_options o;
        parley_session_options_init(&o);
        o.id = kId;
        in->created = parley_session_create(in->e, &o, &in->again);
        return 0;
      },
      &inside, nullptr);
  CHECK(sent == PARLEY_E_CANCELLED);
  CHECK_MESSAGE(inside.created == PARLEY_OK, parley_last_error());
  parley_session_close(inside.again);
  parley_engine_close(e);
}

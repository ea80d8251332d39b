// The store through the C ABI: sessions survive the engine, are listed, reopened, suspended,
// and deleted; their state and stored bytes are reported.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "abi_fixture.h"
#include "parley.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

parley_engine* open_with_store(const std::string& db, uint32_t idle_spill_ms = 0,
                               int32_t kv_type = PARLEY_KV_DEFAULT) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = tiny_chat_model().c_str();
  o.store_path = db.c_str();
  o.idle_spill_ms = idle_spill_ms;
  o.kv_type = kv_type;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&o, &e) == PARLEY_OK, parley_last_error());
  return e;
}

std::string list_sessions(parley_engine* e) {
  size_t needed = 0;
  REQUIRE(parley_store_list_sessions(e, nullptr, 0, &needed) == PARLEY_OK);
  std::string buf(needed, '\0');
  REQUIRE(parley_store_list_sessions(e, buf.data(), buf.size(), &needed) == PARLEY_OK);
  buf.resize(needed - 1);
  return buf;
}

parley_session_info info_of(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  return info;
}

}  // namespace

TEST_CASE("a conversation survives its engine and is reopened by id") {
  TempDir dir;
  const std::string db = (dir / "sessions.db").string();
  auto g = greedy_options(6);
  std::vector<int32_t> tokens;
  {
    parley_engine* e = open_with_store(db);
    parley_session* s = create_raw_session(e, "alice");
    parley_session* t = create_raw_session(e, "bob");
    REQUIRE(parley_session_send(s, "a b c", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
    tokens = session_tokens(s);
    CHECK(list_sessions(e) == "alice\nbob");
    parley_engine_close(e);  // spills both; they stay usable
    CHECK(info_of(s).state == PARLEY_SESSION_SPILLED);
    CHECK(info_of(s).kv_bytes_resident == 0);
    CHECK(info_of(s).kv_bytes_stored > 0);
    parley_session_close(s);
    parley_session_close(t);
  }
  parley_engine* e = open_with_store(db);
  parley_session* s = nullptr;
  REQUIRE(parley_session_open(e, "alice", &s) == PARLEY_OK);
  CHECK(session_tokens(s) == tokens);
  CHECK(info_of(s).n_turns == 2);
  parley_turn_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_session_send(s, "d", &g, nullptr, nullptr, &st) == PARLEY_OK);
  CHECK(st.kv_source == PARLEY_KV_SOURCE_RESTORED);
  CHECK(st.reused_tokens == tokens.size() - 1);

  parley_session* again = nullptr;
  CHECK(parley_session_open(e, "alice", &again) == PARLEY_E_INVALID_ARGUMENT);  // already open
  CHECK(parley_session_open(e, "carol", &again) == PARLEY_E_NOT_FOUND);
  parley_session* dup = nullptr;
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = "bob";  // stored, though not open: a new session may not take its id
  CHECK(parley_session_create(e, &so, &dup) == PARLEY_E_INVALID_ARGUMENT);

  CHECK(parley_session_delete(e, "alice") == PARLEY_E_INVALID_ARGUMENT);  // open
  parley_session_close(s);
  CHECK(parley_session_delete(e, "alice") == PARLEY_OK);
  CHECK(parley_session_delete(e, "alice") == PARLEY_E_NOT_FOUND);
  CHECK(list_sessions(e) == "bob");
  parley_engine_close(e);
}

TEST_CASE("suspend frees the KV; the next send restores it") {
  TempDir dir;
  parley_engine* e = open_with_store((dir / "s.db").string());
  parley_session* s = create_raw_session(e, nullptr);
  auto g = greedy_options(20);
  REQUIRE(parley_session_send(s, "a b c d", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(info_of(s).state == PARLEY_SESSION_ACTIVE);
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);
  CHECK(info_of(s).state == PARLEY_SESSION_SPILLED);
  parley_engine_stats es;
  es.struct_size = sizeof es;
  REQUIRE(parley_engine_get_stats(e, &es) == PARLEY_OK);
  CHECK(es.sessions_spilled == 1);
  CHECK(es.kv_blocks_used == 0);
  CHECK(es.store_bytes > 0);
  parley_turn_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_session_send(s, "e", &g, nullptr, nullptr, &st) == PARLEY_OK);
  CHECK(st.kv_source == PARLEY_KV_SOURCE_RESTORED);
  CHECK(info_of(s).state == PARLEY_SESSION_ACTIVE);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a used id is refused naming why: open here, or stored and not open") {
  TempDir dir;
  parley_engine* e = open_with_store((dir / "sessions.db").string());
  parley_session* s = create_raw_session(e, "x");
  parley_session_options o;
  parley_session_options_init(&o);
  o.id = "x";
  parley_session* again = nullptr;
  CHECK(parley_session_create(e, &o, &again) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("in use by an open session"));
  CHECK(parley_session_fork(s, "x", &again) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("in use by an open session"));
  CHECK(parley_session_open(e, "x", &again) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("in use by an open session"));
  parley_session_close(s);
  CHECK(parley_session_create(e, &o, &again) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("stored conversation; open it instead"));
  REQUIRE(parley_session_open(e, "x", &again) == PARLEY_OK);
  parley_session_close(again);
  parley_engine_close(e);
}

namespace {

parley_stored_session_info stored_info(parley_engine* e, const char* id) {
  parley_stored_session_info info;
  info.struct_size = sizeof info;
  REQUIRE_MESSAGE(parley_store_get_session_info(e, id, &info) == PARLEY_OK, parley_last_error());
  return info;
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("parley_store_get_session_info: dates, turns, stored KV and whether it is open") {
  TempDir dir;
  const std::string db = (dir / "sessions.db").string();
  const auto g = greedy_options(6);
  parley_engine* e = open_with_store(db);
  const int64_t before = unix_ms_now();
  parley_session* s = create_raw_session(e, "alice");
  auto info = stored_info(e, "alice");
  CHECK(info.n_turns == 0);
  CHECK(info.is_open == 1);
  CHECK(info.same_model == 1);
  CHECK(info.kv_bytes_stored == 0);
  CHECK(info.created_unix_ms >= before);
  CHECK(info.updated_unix_ms >= info.created_unix_ms);
  const int64_t created = info.created_unix_ms;

  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(parley_session_send(s, "a b c", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  info = stored_info(e, "alice");
  CHECK(info.n_turns == 2);
  CHECK(info.created_unix_ms == created);
  CHECK(info.updated_unix_ms > created);
  CHECK(info.updated_unix_ms <= unix_ms_now());
  CHECK(info.kv_bytes_stored == 0);  // still in memory

  parley_session_close(s);  // spills the KV
  info = stored_info(e, "alice");
  CHECK(info.is_open == 0);
  CHECK(info.n_turns == 2);
  CHECK(info.kv_bytes_stored > 0);

  // Refusals: a bad id, no such session, no store, a bad struct.
  parley_stored_session_info out;
  out.struct_size = sizeof out;
  CHECK(parley_store_get_session_info(e, "nobody", &out) == PARLEY_E_NOT_FOUND);
  CHECK(last_error_mentions("nobody"));
  CHECK(parley_store_get_session_info(e, "", &out) == PARLEY_E_INVALID_ARGUMENT);
  out.struct_size = 3;
  CHECK(parley_store_get_session_info(e, "alice", &out) == PARLEY_E_INVALID_ARGUMENT);
  parley_engine_close(e);
  EngineHandle no_store(tiny_chat_model());
  out.struct_size = sizeof out;
  CHECK(parley_store_get_session_info(no_store, "alice", &out) == PARLEY_E_NOT_FOUND);
  CHECK(last_error_mentions("store_path"));
}

TEST_CASE("parley_store_get_session_info: a conversation of another model is marked so") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string db = (dir / "sessions.db").string();
  parley_engine* e = open_with_store(db);
  parley_session_close(create_raw_session(e, "tiny"));
  parley_engine_close(e);
  e = open_engine_with_store(gguf.string(), db);
  CHECK(stored_info(e, "tiny").same_model == 0);
  parley_session_close(create_raw_session(e, "stories"));
  CHECK(stored_info(e, "stories").same_model == 1);
  parley_engine_close(e);
}

// same_model says whether the stored KV can come back: restoring takes only a KV of this
// engine's model and kv_type, whatever model the conversation was started with.
TEST_CASE("parley_store_get_session_info: same_model follows the stored KV's model and type") {
  TempDir dir;
  const std::string db = (dir / "sessions.db").string();
  const auto g = greedy_options(4);
  parley_engine* e = open_with_store(db, 0, PARLEY_KV_INT8);
  parley_session* s = create_raw_session(e, "int8");
  REQUIRE(parley_session_send(s, "a b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_session_close(s);  // its KV stored as INT8
  parley_session_close(create_raw_session(e, "no-kv"));
  parley_engine_close(e);

  e = open_with_store(db, 0, PARLEY_KV_F16);
  REQUIRE(stored_info(e, "int8").kv_bytes_stored > 0);
  CHECK(stored_info(e, "int8").same_model == 0);   // an F16 engine recomputes it
  CHECK(stored_info(e, "no-kv").same_model == 1);  // no KV: the model it was made with
  // This engine's send and spill store the KV as F16: now it comes back here.
  REQUIRE(parley_session_open(e, "int8", &s) == PARLEY_OK);
  REQUIRE(parley_session_send(s, "c", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_session_close(s);
  CHECK(stored_info(e, "int8").same_model == 1);
  parley_engine_close(e);
}

TEST_CASE("parley_session_set_overflow: the stored updated_unix_ms moves with it") {
  TempDir dir;
  parley_engine* e = open_with_store((dir / "sessions.db").string());
  parley_session* s = create_raw_session(e, "x");
  const int64_t before = stored_info(e, "x").updated_unix_ms;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);
  CHECK(stored_info(e, "x").updated_unix_ms > before);
  CHECK(stored_info(e, "x").updated_unix_ms <= unix_ms_now());
  // The policy it already has: a no-op, nothing written.
  const int64_t set = stored_info(e, "x").updated_unix_ms;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);
  CHECK(stored_info(e, "x").updated_unix_ms == set);
  parley_session_close(s);
  parley_engine_close(e);
}

// An id is the application's bytes: a message shows it escaped and cut, one readable line.
TEST_CASE("an id in an error message is escaped and cut, never echoed raw") {
  TempDir dir;
  parley_engine* e = open_with_store((dir / "sessions.db").string());
  parley_session* s = nullptr;
  CHECK(parley_session_open(e, "bad\xff\xfe", &s) == PARLEY_E_NOT_FOUND);
  std::string message = parley_last_error();
  CHECK(message.find('\xff') == std::string::npos);
  CHECK(last_error_mentions("'bad\\xFF\\xFE'"));
  CHECK(parley_session_delete(e, "x\xc3") == PARLEY_E_NOT_FOUND);
  CHECK(last_error_mentions("'x\\xC3'"));
  CHECK(parley_session_open(e, "line\nbreak", &s) == PARLEY_E_NOT_FOUND);
  CHECK(std::string(parley_last_error()).find('\n') == std::string::npos);
  const std::string huge(10000, 'z');
  CHECK(parley_session_open(e, huge.c_str(), &s) == PARLEY_E_NOT_FOUND);
  message = parley_last_error();
  CHECK(message.size() < 300);
  CHECK(message.find("zzz...'") != std::string::npos);
  parley_engine_close(e);
}

TEST_CASE("idle spills the store refuses are tried again less and less often") {
  TempDir dir;
  const std::string db = (dir / "moved.db").string();
  parley_engine* e = open_with_store(db, 20);  // idle after 20 ms, checked every 5 ms
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  const auto g = greedy_options(4);
  REQUIRE(parley_session_send(s, "Hello", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  // Once the file is moved away, every commit is refused: no spill can succeed.
  static std::atomic<int> refused{0};
  refused = 0;
  parley_set_log_callback(
      [](int, const char* msg, void*) {
        if (std::strstr(msg, "cannot spill session")) ++refused;
      },
      nullptr);
  std::filesystem::rename(db, db + ".elsewhere");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int refused_in_time = refused.load();
  parley_set_log_callback(nullptr, nullptr);
  // Every 5 ms that would be some 300 passes, each encoding the KV again; waiting twice as
  // long after each refusal, about 8.
  MESSAGE(refused_in_time << " spills refused in 1.5 s");
  CHECK(refused_in_time >= 1);
  CHECK(refused_in_time <= 12);
  CHECK(info_of(s).state != PARLEY_SESSION_SPILLED);  // its KV stays in memory
  parley_session_close(s);
  parley_engine_close(e);
}

// A log callback that hands each line to the program's main thread and waits until that
// thread has gone on, as a UI's dispatcher does. The spiller says its failure while it holds
// no session: the main thread's calls on the session go on meanwhile.
TEST_CASE("the idle spiller's warning lets calls on the session it names go on") {
  TempDir dir;
  const std::string db = (dir / "moved.db").string();
  // Idle long enough after the send for the file to be moved first, on a loaded machine too.
  parley_engine* e = open_with_store(db, 300);
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  const auto g = greedy_options(4);
  REQUIRE(parley_session_send(s, "Hello", &g, nullptr, nullptr, nullptr) == PARLEY_OK);

  struct DefaultLogAtEnd {
    ~DefaultLogAtEnd() { parley_set_log_callback(nullptr, nullptr); }
  } restore;
  static std::mutex m;
  static std::condition_variable changed;
  static bool waiting = false, answered = false, answered_in_time = false;
  static std::thread::id main_thread;
  waiting = answered = answered_in_time = false;
  main_thread = std::this_thread::get_id();
  parley_set_log_callback(
      [](int, const char* msg, void*) {
        if (std::this_thread::get_id() == main_thread || !std::strstr(msg, "cannot spill"))
          return;
        std::unique_lock lock(m);
        if (waiting) return;  // the first line only
        waiting = true;
        changed.notify_all();
        answered_in_time = changed.wait_for(lock, std::chrono::seconds(5), [] { return answered; });
      },
      nullptr);
  std::filesystem::rename(db, db + ".elsewhere");  // every spill is refused from now on
  {
    std::unique_lock lock(m);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(10), [] { return waiting; }));
  }
  parley_session_info info;
  info.struct_size = sizeof info;
  CHECK(parley_session_get_info(s, &info) == PARLEY_OK);  // while the callback waits
  {
    std::lock_guard lock(m);
    answered = true;
  }
  changed.notify_all();
  parley_session_close(s);
  parley_engine_close(e);
  std::lock_guard lock(m);
  CHECK(answered_in_time);
}

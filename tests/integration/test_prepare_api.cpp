// parley_session_prepare through the C ABI: the figures it reports for a new conversation's
// opening and for a conversation reopened from the store, what the next send then reports,
// and the figures of a prepare that parley_session_interrupt() stopped.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

const char* kSystem =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her big red ball. One day, she saw a small dog under a tree.";

parley_turn_stats new_stats() {
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  return stats;
}

parley_session* create_session(parley_engine* e, const char* id, const char* system) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = id;
  so.system_prompt = system;
  so.chat_template = "raw";
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &so, &s) == PARLEY_OK, parley_last_error());
  return s;
}

}  // namespace

TEST_CASE("parley_session_prepare: an opening, then a reopened conversation, in figures") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  const std::string store = (dir / "s.db").string();
  const parley_generate_options g = greedy_options(8);
  {
    parley_engine* e = open_engine_with_store(gguf.string(), store);
    parley_session* s = create_session(e, "npc", kSystem);
    parley_turn_stats prepared = new_stats();
    REQUIRE_MESSAGE(parley_session_prepare(s, &prepared) == PARLEY_OK, parley_last_error());
    CHECK(prepared.computed_tokens >= 2 * 16);
    CHECK(prepared.computed_tokens % 16 == 0);
    CHECK(prepared.reused_tokens == 0);
    CHECK(prepared.kv_source == PARLEY_KV_SOURCE_NEW);
    CHECK(prepared.prompt_tokens == 0);
    CHECK(prepared.generated_tokens == 0);
    CHECK(prepared.stop_reason == 0);  // no reply, no reason
    CHECK(prepared.stop_index == -1);
    CHECK(session_info(s).kv_bytes_resident > 0);
    CHECK(session_info(s).n_tokens == 0);

    parley_turn_stats sent = new_stats();
    REQUIRE(parley_session_send(s, " Lily", &g, nullptr, nullptr, &sent) == PARLEY_OK);
    CHECK(sent.reused_tokens == prepared.computed_tokens);
    CHECK(sent.computed_tokens == sent.prompt_tokens - sent.reused_tokens);
    parley_session_close(s);
    parley_engine_close(e);
  }
  parley_engine* e = open_engine_with_store(gguf.string(), store);
  parley_session* s = nullptr;
  REQUIRE(parley_session_open(e, "npc", &s) == PARLEY_OK);
  CHECK(session_info(s).state == PARLEY_SESSION_SPILLED);
  const uint32_t n_tokens = session_info(s).n_tokens;
  parley_turn_stats restored = new_stats();
  REQUIRE(parley_session_prepare(s, &restored) == PARLEY_OK);
  CHECK(restored.kv_source == PARLEY_KV_SOURCE_RESTORED);
  CHECK(restored.restore_ms >= 0);
  CHECK(restored.reused_tokens == n_tokens - 1);
  CHECK(restored.computed_tokens == 0);
  CHECK(session_info(s).state == PARLEY_SESSION_ACTIVE);

  parley_turn_stats sent = new_stats();
  REQUIRE(parley_session_send(s, " Then", &g, nullptr, nullptr, &sent) == PARLEY_OK);
  CHECK(sent.kv_source == PARLEY_KV_SOURCE_RESIDENT);
  CHECK(sent.restore_ms == 0);
  CHECK(sent.computed_tokens == sent.prompt_tokens + 1);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("the send after parley_session_prepare starts from the prepared opening: RESIDENT") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  const parley_generate_options g = greedy_options(8);
  for (const int prepares : {1, 2}) {
    CAPTURE(prepares);
    parley_session* s = create_session(e, nullptr, kSystem);
    parley_turn_stats prepared = new_stats();
    for (int i = 0; i < prepares; ++i) {
      REQUIRE_MESSAGE(parley_session_prepare(s, &prepared) == PARLEY_OK, parley_last_error());
    }
    // A second prepare finds the first one's opening held.
    CHECK(prepared.kv_source ==
          (prepares == 1 ? PARLEY_KV_SOURCE_NEW : PARLEY_KV_SOURCE_RESIDENT));
    REQUIRE(session_info(s).kv_bytes_resident > 0);
    REQUIRE(session_info(s).n_tokens == 0);
    parley_turn_stats sent = new_stats();
    REQUIRE(parley_session_send(s, " Lily", &g, nullptr, nullptr, &sent) == PARLEY_OK);
    CHECK(sent.reused_tokens > 0);
    CHECK(sent.kv_source == PARLEY_KV_SOURCE_RESIDENT);
    parley_session_close(s);
  }
  // Without a prepare, the first send has nothing to start from.
  parley_session* s = create_session(e, nullptr, kSystem);
  parley_turn_stats sent = new_stats();
  REQUIRE(parley_session_send(s, " Lily", &g, nullptr, nullptr, &sent) == PARLEY_OK);
  CHECK(sent.kv_source == PARLEY_KV_SOURCE_NEW);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("parley_session_prepare: stopped by parley_session_interrupt, with its figures") {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = long_context_model().c_str();
  eo.n_threads = 1;  // a core left for the thread that asks to stop
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  std::string system;
  for (int i = 0; i < 250; ++i) system += "a b c ";
  parley_session* s = create_session(e, nullptr, system.c_str());

  std::atomic<bool> started{false}, done{false};
  std::thread stopper([&] {
    while (!done.load()) {
      parley_session_interrupt(s);
      started.store(true);
      std::this_thread::yield();
    }
  });
  while (!started.load()) std::this_thread::yield();
  parley_turn_stats stopped = new_stats();
  stopped.stop_index = 12345;  // to see that the figures were written
  const parley_status status = parley_session_prepare(s, &stopped);
  done.store(true);
  stopper.join();
  CHECK(status == PARLEY_E_CANCELLED);
  CHECK(std::string(parley_last_error()).find("kept") != std::string::npos);
  CHECK(stopped.stop_index == -1);
  CHECK(stopped.kv_source == PARLEY_KV_SOURCE_NEW);

  parley_turn_stats rest = new_stats();
  REQUIRE(parley_session_prepare(s, &rest) == PARLEY_OK);
  CHECK(rest.reused_tokens == stopped.computed_tokens);
  CHECK(rest.computed_tokens > 0);
  CHECK((rest.reused_tokens + rest.computed_tokens) % 16 == 0);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a suspended session rewound to its system prompt holds no stored KV: not spilled") {
  // It then reports what a session that was never suspended would: its opening is new.
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const TempDir dir;
  parley_engine* e = open_engine_with_store(gguf.string(), (dir / "s.db").string());
  parley_session* s = create_session(e, "npc", kSystem);
  const parley_generate_options g = greedy_options(8);
  REQUIRE(parley_session_send(s, " Lily", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  REQUIRE(parley_session_suspend(s) == PARLEY_OK);
  REQUIRE(session_info(s).state == PARLEY_SESSION_SPILLED);
  REQUIRE(parley_session_rewind(s, 2) == PARLEY_OK);
  CHECK(session_info(s).n_tokens == 0);
  CHECK(session_info(s).kv_bytes_stored == 0);
  CHECK(session_info(s).state != PARLEY_SESSION_SPILLED);
  parley_engine_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_engine_get_stats(e, &st) == PARLEY_OK);
  CHECK(st.sessions_spilled == 0);
  parley_turn_stats prepared = new_stats();
  REQUIRE_MESSAGE(parley_session_prepare(s, &prepared) == PARLEY_OK, parley_last_error());
  CHECK(prepared.kv_source == PARLEY_KV_SOURCE_NEW);
  parley_session_close(s);
  parley_engine_close(e);
}

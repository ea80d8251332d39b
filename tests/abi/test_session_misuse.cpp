// parley_session_* with bad arguments and in bad states: documented statuses, messages, and
// the session left as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "abi_fixture.h"
#include "parley.h"
#include "support/sanitizer_build.h"

using namespace parley::test;

namespace {

parley_status create(parley_engine* e, const parley_session_options& o, parley_session** out) {
  *out = reinterpret_cast<parley_session*>(uintptr_t(0x99));
  return parley_session_create(e, &o, out);
}

std::string session_id(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  return info.id;
}

}  // namespace

TEST_CASE("session_create checks its options") {
  EngineHandle e(tiny_chat_model());
  parley_session* s = nullptr;
  parley_session_options o;
  parley_session_options_init(&o);

  SUBCASE("unknown template") {
    o.chat_template = "alpaca";
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("alpaca"));
  }
  SUBCASE("bad ids: too long, control characters, invalid UTF-8, empty") {
    const std::string long_id(128, 'x');
    o.id = long_id.c_str();
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("127"));
    o.id = "two\nlines";
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("control"));
    o.id = "bad\xC3";
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
    o.id = "";
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("overflow policy and reserved field") {
    o.overflow = 5;
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
    o.overflow = PARLEY_OVERFLOW_ERROR;
    o.reserved0 = 1;
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("a system prompt longer than the context") {
    const std::string huge(2000, 'a');
    o.system_prompt = huge.c_str();
    o.chat_template = "llama2";
    CHECK(create(e, o, &s) == PARLEY_E_CONTEXT_FULL);
    CHECK(last_error_mentions("the system prompt) takes"));
  }
  SUBCASE("invalid UTF-8 in the system prompt") {
    o.system_prompt = "\xFF\xFE";
    CHECK(create(e, o, &s) == PARLEY_E_INVALID_ARGUMENT);
  }
  CHECK(s == nullptr);
}

TEST_CASE("session ids: given, generated, unique among live sessions") {
  EngineHandle e(tiny_chat_model());
  parley_session_options o;
  parley_session_options_init(&o);
  const std::string max_id(127, 'y');
  o.id = max_id.c_str();
  parley_session* a = nullptr;
  REQUIRE(parley_session_create(e, &o, &a) == PARLEY_OK);
  CHECK(session_id(a) == max_id);

  parley_session* b = nullptr;
  CHECK(create(e, o, &b) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("in use"));
  CHECK(b == nullptr);

  parley_session* g1 = nullptr;
  parley_session* g2 = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &g1) == PARLEY_OK);
  REQUIRE(parley_session_create(e, nullptr, &g2) == PARLEY_OK);
  CHECK(session_id(g1) != session_id(g2));
  CHECK(!session_id(g1).empty());

  parley_session_close(a);  // the id is free again
  REQUIRE(create(e, o, &b) == PARLEY_OK);
  parley_session_close(b);
  parley_session_close(g1);
  parley_session_close(g2);
}

TEST_CASE("send rejects bad input and leaves the session as it was") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(3);
  REQUIRE(parley_session_send(s, "a b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  const auto before = session_tokens(s);

  SUBCASE("NULL text or session") {
    CHECK(parley_session_send(s, nullptr, &g, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(parley_session_send(nullptr, "a", &g, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("invalid UTF-8") {
    CHECK(parley_session_send(s, "a\xC0\xAF", &g, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("UTF-8"));
  }
  SUBCASE("bad generate options") {
    auto bad = g;
    bad.struct_size = 8;
    CHECK(parley_session_send(s, "a", &bad, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
    bad = g;
    bad.temperature = -1.0f;
    CHECK(parley_session_send(s, "a", &bad, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("temperature"));
    bad = g;
    bad.top_p = 1.5f;
    CHECK(parley_session_send(s, "a", &bad, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("stats with a bad struct_size") {
    parley_turn_stats st;
    st.struct_size = 4;
    CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, &st) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("a message longer than what is left of the context") {
    std::string lots;
    for (int i = 0; i < 300; ++i) lots += "a b ";
    CHECK(parley_session_send(s, lots.c_str(), &g, nullptr, nullptr, nullptr) == PARLEY_E_CONTEXT_FULL);
    CHECK(last_error_mentions("tokens and its reply at least 1, but only"));
  }
  CHECK(session_tokens(s) == before);
  // ... and it still works.
  CHECK(parley_session_send(s, "b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(session_tokens(s).size() > before.size());
}

TEST_CASE("a reply stops at the end of the context, and the next message is CONTEXT_FULL") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(0);  // 0 = up to the end of the context
  parley_turn_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_session_send(s, "a", &g, nullptr, nullptr, &st) == PARLEY_OK);
  CHECK(session_tokens(s).size() == 256);
  CHECK(st.prompt_tokens + st.generated_tokens == 256);
  CHECK(parley_session_send(s, "b", &g, nullptr, nullptr, nullptr) == PARLEY_E_CONTEXT_FULL);
}

TEST_CASE("closed and NULL session handles") {
  EngineHandle e(tiny_chat_model());
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  parley_session_close(s);
  auto g = greedy_options(2);
  CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_E_MISUSE);
  CHECK(parley_session_interrupt(s) == PARLEY_E_MISUSE);
  parley_session_info info;
  info.struct_size = sizeof info;
  CHECK(parley_session_get_info(s, &info) == PARLEY_E_MISUSE);
  CHECK(parley_session_get_info(nullptr, &info) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_interrupt(nullptr) == PARLEY_E_INVALID_ARGUMENT);
  parley_session_close(s);  // a second close of a dead handle is harmless
  parley_session_close(nullptr);
}

TEST_CASE("a session outlives its closed engine") {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = tiny_chat_model().c_str();
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  parley_engine_close(e);
  auto g = greedy_options(3);
  CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_session_close(s);  // frees the engine too (ASan would report a leak otherwise)
}

TEST_CASE("turns and tokens of a conversation") {
  EngineHandle e(tiny_chat_model());
  parley_session_options o;
  parley_session_options_init(&o);
  o.system_prompt = "a b c";
  o.chat_template = "zephyr";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &o, &s) == PARLEY_OK);
  auto g = greedy_options(4);
  std::string streamed;
  auto collect = [](const char* utf8, size_t len, void* user) {
    static_cast<std::string*>(user)->append(utf8, len);
    return 0;
  };
  parley_turn_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_session_send(s, "d e", &g, collect, &streamed, &st) == PARLEY_OK);
  CHECK(st.kv_source == PARLEY_KV_SOURCE_NEW);
  CHECK(st.reused_tokens == 0);
  CHECK(st.generated_tokens == 4);
  CHECK(st.computed_tokens == st.prompt_tokens);

  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  CHECK(info.n_turns == 3);
  CHECK(info.state == PARLEY_SESSION_ACTIVE);
  CHECK(info.kv_bytes_resident > 0);
  CHECK(info.n_tokens == session_tokens(s).size());

  parley_turn t;
  t.struct_size = sizeof t;
  REQUIRE(parley_session_get_turn(s, 0, &t) == PARLEY_OK);
  CHECK(t.role == PARLEY_ROLE_SYSTEM);
  CHECK(std::string(t.text) == "a b c");
  const uint32_t system_tokens = t.n_tokens;
  REQUIRE(parley_session_get_turn(s, 1, &t) == PARLEY_OK);
  CHECK(t.role == PARLEY_ROLE_USER);
  CHECK(std::string(t.text) == "d e");
  CHECK(system_tokens + t.n_tokens == st.prompt_tokens);
  REQUIRE(parley_session_get_turn(s, 2, &t) == PARLEY_OK);
  CHECK(t.role == PARLEY_ROLE_ASSISTANT);
  CHECK(std::string(t.text) == streamed);
  CHECK(t.n_tokens == 4);
  CHECK(parley_session_get_turn(s, 3, &t) == PARLEY_E_NOT_FOUND);
  CHECK(parley_session_get_turn(s, 0, nullptr) == PARLEY_E_INVALID_ARGUMENT);

  // The second turn reuses the whole conversation and computes only what is new.
  const size_t n_before = session_tokens(s).size();
  REQUIRE(parley_session_send(s, "f", &g, nullptr, nullptr, &st) == PARLEY_OK);
  CHECK(st.kv_source == PARLEY_KV_SOURCE_RESIDENT);
  CHECK(st.reused_tokens == n_before - 1);  // all but the last reply token, fed now
  CHECK(st.computed_tokens == st.prompt_tokens + 1);
  parley_session_close(s);
}

TEST_CASE("without a store: suspend is UNSUPPORTED, open and delete find nothing, the list is empty") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  parley_session* out = reinterpret_cast<parley_session*>(uintptr_t(1));
  CHECK(parley_session_suspend(s) == PARLEY_E_UNSUPPORTED);
  CHECK(last_error_mentions("store"));
  CHECK(parley_session_open(e, "x", &out) == PARLEY_E_NOT_FOUND);
  CHECK(out == nullptr);
  CHECK(parley_session_delete(e, "x") == PARLEY_E_NOT_FOUND);
  size_t needed = 0;
  CHECK(parley_store_list_sessions(e, nullptr, 0, &needed) == PARLEY_OK);
  CHECK(needed == 1);  // "" and its NUL
  CHECK(parley_session_open(e, nullptr, &out) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_open(e, "", &out) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_delete(e, nullptr) == PARLEY_E_INVALID_ARGUMENT);
}

TEST_CASE("fork and rewind check their arguments") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto g = greedy_options(2);
  REQUIRE(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_session* out = reinterpret_cast<parley_session*>(uintptr_t(1));
  CHECK(parley_session_fork(s, "", &out) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(parley_session_fork(s, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_fork(nullptr, nullptr, &out) == PARLEY_E_INVALID_ARGUMENT);
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  CHECK(parley_session_fork(s, info.id, &out) == PARLEY_E_INVALID_ARGUMENT);  // id in use
  CHECK(std::strstr(parley_last_error(), "in use") != nullptr);

  CHECK(parley_session_rewind(s, 3) == PARLEY_E_INVALID_ARGUMENT);  // it has 2 messages
  CHECK(std::strstr(parley_last_error(), "rewind") != nullptr);
  CHECK(parley_session_rewind(s, 0) == PARLEY_OK);
  CHECK(parley_session_rewind(nullptr, 1) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(session_tokens(s).size() > 0);
}

TEST_CASE("the KV budget is enforced") {
  // One 16-token INT8 block of this model is 16 x 160 = 2560 bytes: a budget of two blocks.
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8, 0, 2 * 2560);
  parley_engine_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_engine_get_stats(e, &st) == PARLEY_OK);
  CHECK(st.kv_blocks_total == 2);
  parley_session* a = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &a) == PARLEY_OK);
  SessionHandle b(e);
  auto g = greedy_options(2);
  REQUIRE(parley_session_send(a, "a", &g, nullptr, nullptr, nullptr) == PARLEY_OK);  // 1 block
  // 21 tokens need two blocks; one is left.
  CHECK(parley_session_send(b, "a b c d e f g h i j k l m n o p q r s t", &g, nullptr, nullptr, nullptr) ==
        PARLEY_E_OUT_OF_MEMORY);
  CHECK(last_error_mentions("budget"));
  CHECK(session_tokens(b).empty());  // left as it was
  parley_session_close(a);           // its block goes back (it was never published: not full)
  CHECK(parley_session_send(b, "a b c d e f g h i j k l m n o p q r s t", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
}

TEST_CASE("a fork to an id in use is refused as such when the KV budget is spent too") {
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8, 0, 2 * 2560);  // two blocks
  SessionHandle a(e);
  auto g = greedy_options(4);
  // 21 + 4 tokens: both blocks, the second partly filled (a fork copies it).
  REQUIRE(parley_session_send(a, "a b c d e f g h i j k l m n o p q r s t", &g, nullptr, nullptr,
                              nullptr) == PARLEY_OK);
  parley_session* fork = nullptr;
  REQUIRE(parley_session_fork(a, nullptr, &fork) == PARLEY_E_OUT_OF_MEMORY);
  const std::string id = session_id(a);
  CHECK(parley_session_fork(a, id.c_str(), &fork) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("already in use"));
  CHECK(parley_session_fork(a, "bad\nid", &fork) == PARLEY_E_INVALID_ARGUMENT);
}

// DROP_OLDEST forgets exchanges to make room before the turn's KV is computed; when the
// budget then runs out before any reply token, the turn failed: nothing may be forgotten.
TEST_CASE("DROP_OLDEST: a turn the KV budget refuses forgets no exchange") {
  // Context 64; six 16-token blocks, most of which another session holds.
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8, 64, 6 * 2560);
  SessionHandle a(e);
  REQUIRE(parley_session_set_overflow(a, PARLEY_OVERFLOW_DROP_OLDEST) == PARLEY_OK);
  auto g = greedy_options(10);
  REQUIRE(parley_session_send(a, "a b c d e f g h i j", &g, nullptr, nullptr, nullptr) == 0);
  REQUIRE(parley_session_send(a, " k l m n o p q r s", &g, nullptr, nullptr, nullptr) == 0);
  const std::vector<int32_t> tokens = session_tokens(a);
  REQUIRE(tokens.size() > 32);  // three blocks
  const auto hold_blocks = [&](size_t n_blocks) {
    parley_session* holder = nullptr;
    REQUIRE(parley_session_create(e, nullptr, &holder) == PARLEY_OK);
    std::string text;
    for (size_t i = 0; i + 2 < 16 * (n_blocks - 1); ++i) text += " a";
    auto two = greedy_options(2);
    REQUIRE(parley_session_send(holder, text.c_str(), &two, nullptr, nullptr, nullptr) == 0);
    return holder;
  };

  SUBCASE("send") {
    parley_session* holder = hold_blocks(3);
    // Fits only without the first exchange, and then needs more blocks than are left.
    const char* message = " t u v w x y z a b c d e f g h i j k l m n o p";
    uint32_t needed = 0, left = 0;
    REQUIRE(parley_session_count_tokens(a, message, &needed, &left) == PARLEY_OK);
    REQUIRE(tokens.size() + needed + 1 > 64);
    auto one = greedy_options(1);
    CHECK(parley_session_send(a, message, &one, nullptr, nullptr, nullptr) ==
          PARLEY_E_OUT_OF_MEMORY);
    CHECK(last_error_mentions("budget"));
    parley_session_close(holder);
  }
  SUBCASE("continue") {
    // The full blocks stay with a fork, so forgetting the first exchange frees one block.
    parley_session* fork = nullptr;
    REQUIRE(parley_session_fork(a, nullptr, &fork) == PARLEY_OK);
    parley_session* holder = hold_blocks(2);
    auto long_reply = greedy_options(40);
    CHECK(parley_session_continue(a, &long_reply, nullptr, nullptr, nullptr) ==
          PARLEY_E_OUT_OF_MEMORY);
    CHECK(last_error_mentions("budget"));
    parley_session_close(holder);
    parley_session_close(fork);
  }
  CHECK(session_info(a).n_turns == 4);
  CHECK(session_tokens(a) == tokens);
  // And the conversation goes on whole once the blocks are back.
  auto two = greedy_options(2);
  REQUIRE(parley_session_send(a, " t", &two, nullptr, nullptr, nullptr) == PARLEY_OK);
  const std::vector<int32_t> after = session_tokens(a);
  CHECK(std::equal(tokens.begin(), tokens.end(), after.begin()));
  CHECK(session_info(a).n_turns == 6);
}

TEST_CASE("a budget smaller than one KV block is refused at open") {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = tiny_chat_model().c_str();
  o.kv_type = PARLEY_KV_INT8;
  for (uint64_t budget : {uint64_t(1), uint64_t(2559)}) {  // one block: 16 x 160 bytes
    o.kv_budget_bytes = budget;
    parley_engine* e = nullptr;
    CHECK(parley_engine_open(&o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("kv_budget_bytes"));
    CHECK(e == nullptr);
  }
  o.kv_budget_bytes = 2560;
  parley_engine* e = nullptr;
  CHECK(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_engine_close(e);
}

TEST_CASE("a budget of more KV blocks than memory can track is OUT_OF_MEMORY, saying so") {
  if (parley::test::kSanitizerBuild) {
    MESSAGE("skipped: a sanitizer aborts on an allocation this large instead of failing it");
    return;
  }
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = tiny_chat_model().c_str();
  o.kv_type = PARLEY_KV_INT8;
  o.kv_budget_bytes = uint64_t(1) << 60;  // 2^60 / 2560 blocks: petabytes of bookkeeping
  parley_engine* e = nullptr;
  CHECK(parley_engine_open(&o, &e) == PARLEY_E_OUT_OF_MEMORY);
  CHECK(last_error_mentions("kv_budget_bytes 1152921504606846976 holds"));
  CHECK(e == nullptr);
}

TEST_CASE("NaN and infinite sampling options are refused with the rule and the value") {
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8);
  SessionHandle s(e, "raw");
  auto g = greedy_options(2);
  g.temperature = -std::numeric_limits<float>::quiet_NaN();  // printf shows it as "-nan"
  CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("temperature must be finite and >= 0 (got NaN)"));
  g = greedy_options(2);
  for (float penalty : {-2.0f, std::numeric_limits<float>::infinity()}) {
    g.repeat_penalty = penalty;
    CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) ==
          PARLEY_E_INVALID_ARGUMENT);
    // One rule, whichever way the value is out of it.
    CHECK(last_error_mentions("repeat_penalty must be finite and >= 0 (0 or 1 = off; got "));
  }
}

// The budget running out mid-reply ends the reply there: what was streamed is the turn.
TEST_CASE("the KV budget running out during a reply keeps the reply streamed so far") {
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8, 0, 2560);  // one block: 16 tokens
  SessionHandle s(e, "raw");
  auto g = greedy_options(40);
  g.ignore_eos = 1;
  std::string streamed;
  const parley_text_fn collect = [](const char* utf8, size_t len, void* user) {
    static_cast<std::string*>(user)->append(utf8, len);
    return 0;
  };
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  CHECK(parley_session_send(s, "a b", &g, collect, &streamed, &stats) == PARLEY_E_OUT_OF_MEMORY);
  CHECK(last_error_mentions("kept as the turn"));
  CHECK(stats.stop_reason == PARLEY_STOP_OUT_OF_MEMORY);
  CHECK(stats.generated_tokens > 0);
  CHECK(stats.generated_tokens < 40);
  // Every token but the last has its KV: the block's 16 slots.
  CHECK(stats.prompt_tokens + stats.generated_tokens == 17);
  parley_session_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  CHECK(info.n_turns == 2);
  parley_turn reply;
  reply.struct_size = sizeof reply;
  REQUIRE(parley_session_get_turn(s, 1, &reply) == PARLEY_OK);
  CHECK(reply.role == PARLEY_ROLE_ASSISTANT);
  CHECK(std::string(reply.text) == streamed);
}


TEST_CASE("a context too small for any conversation: session creation says why") {
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8, 1);  // BOS alone fills it
  parley_session* s = nullptr;
  parley_session_options o;
  parley_session_options_init(&o);
  o.chat_template = "raw";
  CHECK(parley_session_create(e, &o, &s) == PARLEY_E_CONTEXT_FULL);
  CHECK(last_error_mentions("opening (BOS and the template's markers) takes 1 tokens"));
  CHECK(s == nullptr);
}

TEST_CASE("messages name what is accepted: top_p 0 means off; a stale handle is not an engine") {
  EngineHandle e(tiny_chat_model(), PARLEY_KV_INT8);
  SessionHandle s(e, "raw");
  auto g = greedy_options(2);
  g.top_p = -0.5f;
  CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(last_error_mentions("top_p must be in [0, 1] (0 or 1 = off; got -0.5"));
  g.top_p = 0.0f;
  CHECK(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_engine_stats st;
  st.struct_size = sizeof st;
  auto* stale = reinterpret_cast<parley_engine*>(uintptr_t(0x10));
  CHECK(parley_engine_get_stats(stale, &st) == PARLEY_E_MISUSE);
  CHECK(last_error_mentions("engine handle is closed or not an engine"));
}

// Struct layouts are part of the ABI: every offset is pinned (64-bit targets), there is no
// hidden padding, and the sized init functions respect the caller's struct_size.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "parley.h"

#if UINTPTR_MAX == 0xffffffffffffffffu
static_assert(offsetof(parley_engine_options, struct_size) == 0);
static_assert(offsetof(parley_engine_options, model_path) == 8);
static_assert(offsetof(parley_engine_options, store_path) == 16);
static_assert(offsetof(parley_engine_options, device) == 24);
static_assert(offsetof(parley_engine_options, n_threads) == 32);
static_assert(offsetof(parley_engine_options, kv_type) == 36);
static_assert(offsetof(parley_engine_options, kv_budget_bytes) == 40);
static_assert(offsetof(parley_engine_options, idle_spill_ms) == 48);
static_assert(offsetof(parley_engine_options, context_length) == 52);
static_assert(offsetof(parley_engine_options, on_load_progress) == 56);
static_assert(offsetof(parley_engine_options, load_progress_user) == 64);
static_assert(sizeof(parley_engine_options) == 72);

static_assert(offsetof(parley_session_options, id) == 8);
static_assert(offsetof(parley_session_options, system_prompt) == 16);
static_assert(offsetof(parley_session_options, chat_template) == 24);
static_assert(offsetof(parley_session_options, cache_scope) == 32);
static_assert(offsetof(parley_session_options, overflow) == 40);
static_assert(offsetof(parley_session_options, reserved0) == 44);
static_assert(sizeof(parley_session_options) == 48);

static_assert(offsetof(parley_generate_options, seed) == 8);
static_assert(offsetof(parley_generate_options, max_tokens) == 16);
static_assert(offsetof(parley_generate_options, temperature) == 20);
static_assert(offsetof(parley_generate_options, top_k) == 24);
static_assert(offsetof(parley_generate_options, top_p) == 28);
static_assert(offsetof(parley_generate_options, min_p) == 32);
static_assert(offsetof(parley_generate_options, repeat_penalty) == 36);
static_assert(offsetof(parley_generate_options, repeat_last_n) == 40);
static_assert(offsetof(parley_generate_options, ignore_eos) == 44);
static_assert(offsetof(parley_generate_options, stop) == 48);  // since 0.3
static_assert(offsetof(parley_generate_options, n_stop) == 56);
static_assert(offsetof(parley_generate_options, reserved0) == 60);
static_assert(offsetof(parley_generate_options, reply_prefix) == 64);
static_assert(offsetof(parley_generate_options, logit_bias) == 72);  // since 0.4
static_assert(offsetof(parley_generate_options, n_logit_bias) == 80);
static_assert(offsetof(parley_generate_options, format) == 84);
static_assert(offsetof(parley_generate_options, json_schema) == 88);  // since 0.12
static_assert(sizeof(parley_generate_options) == 96);
static_assert(offsetof(parley_logit_bias, token) == 0);
static_assert(offsetof(parley_logit_bias, bias) == 4);
static_assert(sizeof(parley_logit_bias) == 8);

static_assert(offsetof(parley_turn_stats, prompt_tokens) == 8);
static_assert(offsetof(parley_turn_stats, reused_tokens) == 12);
static_assert(offsetof(parley_turn_stats, computed_tokens) == 16);
static_assert(offsetof(parley_turn_stats, generated_tokens) == 20);
static_assert(offsetof(parley_turn_stats, ttft_ms) == 24);
static_assert(offsetof(parley_turn_stats, tpot_ms) == 32);
static_assert(offsetof(parley_turn_stats, restore_ms) == 40);
static_assert(offsetof(parley_turn_stats, kv_source) == 48);
static_assert(offsetof(parley_turn_stats, reserved0) == 52);
static_assert(offsetof(parley_turn_stats, stop_reason) == 56);  // since 0.3
static_assert(offsetof(parley_turn_stats, stop_index) == 60);
static_assert(sizeof(parley_turn_stats) == 64);

static_assert(offsetof(parley_session_info, id) == 8);
static_assert(offsetof(parley_session_info, n_turns) == 136);
static_assert(offsetof(parley_session_info, n_tokens) == 140);
static_assert(offsetof(parley_session_info, state) == 144);
static_assert(offsetof(parley_session_info, overflow) == 148);  // reserved0 before 0.8
static_assert(offsetof(parley_session_info, kv_bytes_resident) == 152);
static_assert(offsetof(parley_session_info, kv_bytes_stored) == 160);
static_assert(offsetof(parley_session_info, chat_template) == 168);  // since 0.8
static_assert(sizeof(parley_session_info) == 200);

static_assert(offsetof(parley_stored_session_info, created_unix_ms) == 8);  // since 0.4
static_assert(offsetof(parley_stored_session_info, updated_unix_ms) == 16);
static_assert(offsetof(parley_stored_session_info, n_turns) == 24);
static_assert(offsetof(parley_stored_session_info, is_open) == 28);
static_assert(offsetof(parley_stored_session_info, kv_bytes_stored) == 32);
static_assert(offsetof(parley_stored_session_info, same_model) == 40);
static_assert(offsetof(parley_stored_session_info, reserved0) == 44);
static_assert(sizeof(parley_stored_session_info) == 48);

static_assert(offsetof(parley_turn, text) == 8);
static_assert(offsetof(parley_turn, role) == 16);
static_assert(offsetof(parley_turn, n_tokens) == 20);
static_assert(sizeof(parley_turn) == 24);

static_assert(offsetof(parley_engine_stats, sessions_active) == 8);
static_assert(offsetof(parley_engine_stats, sessions_idle) == 12);
static_assert(offsetof(parley_engine_stats, sessions_spilled) == 16);
static_assert(offsetof(parley_engine_stats, reserved0) == 20);
static_assert(offsetof(parley_engine_stats, kv_blocks_total) == 24);
static_assert(offsetof(parley_engine_stats, kv_blocks_used) == 32);
static_assert(offsetof(parley_engine_stats, kv_blocks_shared) == 40);
static_assert(offsetof(parley_engine_stats, kv_blocks_cached) == 48);
static_assert(offsetof(parley_engine_stats, kv_bytes_per_token) == 56);
static_assert(offsetof(parley_engine_stats, kv_bytes_resident) == 64);
static_assert(offsetof(parley_engine_stats, kv_budget_bytes) == 72);
static_assert(offsetof(parley_engine_stats, prefix_hits) == 80);
static_assert(offsetof(parley_engine_stats, prefix_misses) == 88);
static_assert(offsetof(parley_engine_stats, store_bytes) == 96);
static_assert(offsetof(parley_engine_stats, decode_steps) == 104);
static_assert(offsetof(parley_engine_stats, decode_tokens) == 112);
static_assert(sizeof(parley_engine_stats) == 120);

static_assert(offsetof(parley_model_info, name) == 8);
static_assert(offsetof(parley_model_info, architecture) == 136);
static_assert(offsetof(parley_model_info, chat_template) == 168);
static_assert(offsetof(parley_model_info, n_vocab) == 200);
static_assert(offsetof(parley_model_info, context_length) == 224);
static_assert(offsetof(parley_model_info, reserved0) == 228);
static_assert(offsetof(parley_model_info, n_params) == 232);
static_assert(offsetof(parley_model_info, backend) == 240);
static_assert(sizeof(parley_model_info) == 272);
#endif

// Status codes are part of the contract: extend, never renumber.
static_assert(PARLEY_OK == 0 && PARLEY_E_INVALID_ARGUMENT == 1 && PARLEY_E_NOT_FOUND == 2 &&
              PARLEY_E_IO == 3 && PARLEY_E_BAD_MODEL == 4 && PARLEY_E_UNSUPPORTED == 5 &&
              PARLEY_E_OUT_OF_MEMORY == 6 && PARLEY_E_CONTEXT_FULL == 7 && PARLEY_E_BUSY == 8 &&
              PARLEY_E_CANCELLED == 9 && PARLEY_E_CORRUPT == 10 && PARLEY_E_MODEL_MISMATCH == 11 &&
              PARLEY_E_STORAGE == 12 && PARLEY_E_BACKEND == 13 && PARLEY_E_INTERNAL == 14 &&
              PARLEY_E_MISUSE == 15);
static_assert(PARLEY_KV_DEFAULT == 0 && PARLEY_KV_INT8 == 1 && PARLEY_KV_F16 == 2 && PARLEY_KV_F32 == 3);
static_assert(PARLEY_OVERFLOW_ERROR == 0 && PARLEY_OVERFLOW_DROP_OLDEST == 1);
static_assert(PARLEY_KV_SOURCE_NEW == 0 && PARLEY_KV_SOURCE_RESIDENT == 1 &&
              PARLEY_KV_SOURCE_RESTORED == 2 && PARLEY_KV_SOURCE_REBUILT == 3);
static_assert(PARLEY_SESSION_ACTIVE == 0 && PARLEY_SESSION_IDLE == 1 && PARLEY_SESSION_SPILLED == 2);
static_assert(PARLEY_ROLE_SYSTEM == 0 && PARLEY_ROLE_USER == 1 && PARLEY_ROLE_ASSISTANT == 2);
static_assert(PARLEY_LOG_ERROR == 0 && PARLEY_LOG_WARN == 1 && PARLEY_LOG_INFO == 2 && PARLEY_LOG_DEBUG == 3);
static_assert(PARLEY_VERSION_NUMBER == PARLEY_VERSION_MAJOR * 10000 + PARLEY_VERSION_MINOR * 100 + PARLEY_VERSION_PATCH);

TEST_CASE("generate options defaults are the documented ones") {
  parley_generate_options o;
  std::memset(&o, 0xAB, sizeof o);
  parley_generate_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.seed == 0);
  CHECK(o.max_tokens == 256);
  CHECK(o.temperature == doctest::Approx(0.8f));
  CHECK(o.top_k == 40);
  CHECK(o.top_p == doctest::Approx(0.95f));
  CHECK(o.min_p == doctest::Approx(0.05f));
  CHECK(o.repeat_penalty == doctest::Approx(1.0f));
  CHECK(o.repeat_last_n == 64);
  CHECK(o.ignore_eos == 0);
}

TEST_CASE("engine and session options default to zeros and auto") {
  parley_engine_options e;
  std::memset(&e, 0xAB, sizeof e);
  parley_engine_options_init(&e);
  CHECK(e.model_path == nullptr);
  CHECK(e.store_path == nullptr);
  CHECK(std::strcmp(e.device, "auto") == 0);
  CHECK(e.n_threads == 0);
  CHECK(e.kv_type == PARLEY_KV_DEFAULT);
  CHECK(e.kv_budget_bytes == 0);
  CHECK(e.idle_spill_ms == 0);
  CHECK(e.context_length == 0);

  parley_session_options s;
  std::memset(&s, 0xAB, sizeof s);
  parley_session_options_init(&s);
  CHECK(s.id == nullptr);
  CHECK(s.system_prompt == nullptr);
  CHECK(s.chat_template == nullptr);
  CHECK(s.cache_scope == nullptr);
  CHECK(s.overflow == PARLEY_OVERFLOW_ERROR);
  CHECK(s.reserved0 == 0);
}

TEST_CASE("init_sized writes only the caller's bytes") {
  SUBCASE("an older, smaller struct: nothing past its size is touched") {
    std::vector<unsigned char> buf(sizeof(parley_generate_options) + 16, 0xCD);
    const size_t older = offsetof(parley_generate_options, top_k);  // ends before top_k
    parley_generate_options_init_sized(reinterpret_cast<parley_generate_options*>(buf.data()), older);
    const auto* o = reinterpret_cast<const parley_generate_options*>(buf.data());
    CHECK(o->struct_size == older);
    CHECK(o->max_tokens == 256);
    for (size_t i = older; i < buf.size(); ++i) CHECK(buf[i] == 0xCD);
  }
  SUBCASE("a newer, larger struct: our fields set, the unknown tail zeroed") {
    std::vector<unsigned char> buf(sizeof(parley_engine_options) + 24, 0xCD);
    const size_t newer = sizeof(parley_engine_options) + 16;
    parley_engine_options_init_sized(reinterpret_cast<parley_engine_options*>(buf.data()), newer);
    const auto* o = reinterpret_cast<const parley_engine_options*>(buf.data());
    CHECK(o->struct_size == newer);
    CHECK(std::strcmp(o->device, "auto") == 0);
    for (size_t i = sizeof(parley_engine_options); i < newer; ++i) CHECK(buf[i] == 0);
    for (size_t i = newer; i < buf.size(); ++i) CHECK(buf[i] == 0xCD);
  }
  SUBCASE("NULL and sizes too small for struct_size are ignored") {
    parley_session_options_init_sized(nullptr, sizeof(parley_session_options));
    unsigned char tiny[4] = {1, 2, 3, 4};
    parley_session_options_init_sized(reinterpret_cast<parley_session_options*>(tiny), sizeof tiny);
    CHECK(tiny[0] == 1);
    CHECK(tiny[3] == 4);
  }
}

TEST_CASE("status names and the last error") {
  CHECK(std::strcmp(parley_status_name(PARLEY_OK), "PARLEY_OK") == 0);
  CHECK(std::strcmp(parley_status_name(PARLEY_E_BUSY), "PARLEY_E_BUSY") == 0);
  CHECK(std::strcmp(parley_status_name(PARLEY_E_MISUSE), "PARLEY_E_MISUSE") == 0);
  CHECK(std::strcmp(parley_status_name(999), "PARLEY_E_UNKNOWN") == 0);
  CHECK(std::strcmp(parley_status_name(-1), "PARLEY_E_UNKNOWN") == 0);
  CHECK(parley_last_error() != nullptr);
}

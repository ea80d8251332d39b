// Engine and session set-up over the C API that several test suites share.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"

namespace parley::test {

// An engine over `model_path` with the given KV type and default options otherwise; fails the
// test, with the library's message, when it cannot be opened.
inline parley_engine* open_engine(const std::string& model_path, int32_t kv_type) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model_path.c_str();
  eo.kv_type = kv_type;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

// An engine over `model_path` keeping its conversations in the SQLite file `store_path`.
inline parley_engine* open_engine_with_store(const std::string& model_path,
                                             const std::string& store_path) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model_path.c_str();
  eo.store_path = store_path.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

// A new stored session `id` with the raw template; fails the test when it cannot be created.
inline parley_session* create_raw_session(parley_engine* e, const char* id) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = id;
  so.chat_template = "raw";
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &so, &s) == PARLEY_OK, parley_last_error());
  return s;
}

// What parley_session_get_info says of `s`; fails the test when it cannot.
inline parley_session_info session_info(parley_session* s) {
  parley_session_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_session_get_info(s, &info) == PARLEY_OK);
  return info;
}

// A parley_text_fn that appends each piece to the std::string `user` points to.
inline int append_text(const char* utf8, size_t len, void* user) {
  static_cast<std::string*>(user)->append(utf8, len);
  return 0;
}

// The text of message `index` of `s` (parley_session_get_turn); fails the test when it cannot.
inline std::string turn_text(parley_session* s, uint32_t index) {
  parley_turn t{};
  t.struct_size = sizeof t;
  REQUIRE(parley_session_get_turn(s, index, &t) == PARLEY_OK);
  return t.text;
}

// Every token a session holds (prompts and replies), through the two-call size protocol.
inline std::vector<int32_t> session_tokens(parley_session* s) {
  size_t n = 0;
  REQUIRE(parley_session_get_tokens(s, nullptr, 0, &n) == PARLEY_OK);
  std::vector<int32_t> ids(n);
  REQUIRE(parley_session_get_tokens(s, ids.data(), n, &n) == PARLEY_OK);
  return ids;
}

// Every token of a new session (prompt and reply) after one greedy reply of max_tokens to
// `prompt`, on an engine of its own over `model_path` with the given KV type.
inline std::vector<int32_t> greedy_session_tokens(const std::string& model_path, int32_t kv_type,
                                                  const char* prompt, uint32_t max_tokens) {
  parley_engine* e = open_engine(model_path, kv_type);
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  const parley_generate_options g = greedy_options(max_tokens);
  REQUIRE_MESSAGE(parley_session_send(s, prompt, &g, nullptr, nullptr, nullptr) == PARLEY_OK,
                  parley_last_error());
  std::vector<int32_t> ids = session_tokens(s);
  parley_session_close(s);
  parley_engine_close(e);
  return ids;
}

}  // namespace parley::test

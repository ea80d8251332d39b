// Session set-up over the C API that several test suites share.
#pragma once

#include <doctest/doctest.h>

#include "parley.h"

namespace parley::test {

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

}  // namespace parley::test

// CHECK_PARLEY_ERROR(expr, status, "part", ...): `expr` throws parley::Error with that status
// and a message containing every part (the field it names).
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace parley::test {

// The status and message of the parley::Error that f throws; {ok, "(no error)"} when it throws
// none.
template <typename F>
std::pair<Status, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  return {Status::ok, "(no error)"};
}

}  // namespace parley::test

#define CHECK_PARLEY_ERROR(expr, expected_status, ...)                                        \
  do {                                                                                        \
    const auto parley_err_ = ::parley::test::error_of([&] { (void)(expr); });                 \
    INFO("message: ", parley_err_.second);                                                    \
    CHECK(parley_err_.first == (expected_status));                                            \
    for (const std::string& parley_part_ : std::initializer_list<std::string>{__VA_ARGS__}) { \
      CHECK_MESSAGE(parley_err_.second.find(parley_part_) != std::string::npos, "expected '", \
                    parley_part_, "' in the message");                                        \
    }                                                                                         \
  } while (0)

// Every parley_* entry point runs its body inside guarded(): parley::Error becomes its status,
// std::bad_alloc OUT_OF_MEMORY, anything else INTERNAL; the message goes to parley_last_error().
#pragma once

#include <new>
#include <string>

#include "api/last_error.h"
#include "common/error.h"
#include "parley.h"

namespace parley::api {

static_assert(int32_t(Status::misuse) == PARLEY_E_MISUSE, "Status mirrors the C codes");

template <typename Body>
parley_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return PARLEY_OK;
  } catch (const Error& e) {
    set_last_error(function, e.what());
    return parley_status(e.status());
  } catch (const std::bad_alloc&) {
    set_last_error(function, "out of memory");
    return PARLEY_E_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(function, "internal error: ", e.what());
    return PARLEY_E_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error");
    return PARLEY_E_INTERNAL;
  }
}

// Argument checks that read as sentences: check_arg(ids || cap == 0, "ids is NULL").
inline void check_arg(bool ok, const char* message) {
  if (!ok) fail(Status::invalid_argument, message);
}

}  // namespace parley::api

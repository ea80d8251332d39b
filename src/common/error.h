// parley::Error: the one exception type inside the engine. src/api turns it into a status
// code and the thread-local message; nothing else crosses the C ABI.
#pragma once

#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace parley {

// Mirrors the PARLEY_* status codes of parley.h (values must stay equal).
enum class Status : int32_t {
  ok = 0,
  invalid_argument = 1,
  not_found = 2,
  io = 3,
  bad_model = 4,
  unsupported = 5,
  out_of_memory = 6,
  context_full = 7,
  busy = 8,
  cancelled = 9,
  corrupt = 10,
  model_mismatch = 11,
  storage = 12,
  backend = 13,
  internal = 14,
  misuse = 15,
};

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

[[noreturn]] inline void fail(Status status, const std::string& message) {
  throw Error(status, message);
}

// Precondition checks that name what failed: require(n < cap, Status::bad_model, "n_dims ...").
inline void require(bool ok, Status status, const std::string& message) {
  if (!ok) fail(status, message);
}

// The same for checks on hot paths (per token, per block): the message is a function, called
// only when the check fails, so that passing checks build and allocate nothing.
template <std::invocable MessageFn>
void require(bool ok, Status status, MessageFn&& message) {
  if (!ok) fail(status, std::forward<MessageFn>(message)());
}

}  // namespace parley

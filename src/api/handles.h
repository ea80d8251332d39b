// What the opaque C handles are, and the registry of live ones: a closed or foreign handle is
// caught (PARLEY_E_MISUSE) instead of touching freed memory. Calls hold a shared_ptr to the
// handle while they run, so closing from another thread or from a callback is safe: the
// object dies when the last running call lets go of it.
// A handle belongs to the process that made it: in a child made by fork(), the parent's handles
// are refused (PARLEY_E_MISUSE), and closing them leaves them alone (see unregister).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "engine/session.h"

struct parley_engine {
  std::shared_ptr<parley::engine::Engine> engine;
  pid_t owner = 0;                // the process that opened it; set by register_engine
  uint64_t owner_generation = 0;  // its fork() generation (handles.cpp)
};

struct parley_session {
  std::unique_ptr<parley::engine::Session> session;
  std::string turn_text;  // backs parley_turn.text until the next call on this session
  pid_t owner = 0;        // the process that made it; set by register_session
  uint64_t owner_generation = 0;  // its fork() generation (handles.cpp)
};

namespace parley::api {

parley_engine* register_engine(std::shared_ptr<parley_engine> handle);
parley_session* register_session(std::shared_ptr<parley_session> handle);

// Throws Error(invalid_argument) for NULL, Error(misuse) for a closed or foreign handle, or one
// a parent process made before fork().
std::shared_ptr<parley_engine> acquire(parley_engine* e);
std::shared_ptr<parley_session> acquire(parley_session* s);

// Removes a handle from the registry; returns it (empty when it was not live), so the caller
// drops the last reference outside the registry's lock. A handle inherited through fork() is
// returned empty and left registered: it is never freed in this process.
std::shared_ptr<parley_engine> unregister(parley_engine* e);
std::shared_ptr<parley_session> unregister(parley_session* s);

// Holds a session for the lifetime of this object; a second caller (another thread, or the
// session's own callback) gets Error(busy). A spill the engine is running is waited out.
class SessionUse {
 public:
  explicit SessionUse(parley_session& s);

 private:
  parley::engine::Session::Use use_;
};

}  // namespace parley::api

// What the opaque C handles are, and the registry of live ones: a closed or foreign handle is
// caught (PARLEY_E_MISUSE) instead of touching freed memory. Calls hold a shared_ptr to the
// handle while they run, so closing from another thread or from a callback is safe: the
// object dies when the last running call lets go of it.
#pragma once

#include <mutex>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/session.h"

struct parley_engine {
  std::shared_ptr<parley::engine::Engine> engine;
};

struct parley_session {
  std::unique_ptr<parley::engine::Session> session;
  std::string turn_text;  // backs parley_turn.text until the next call on this session
};

namespace parley::api {

parley_engine* register_engine(std::shared_ptr<parley_engine> handle);
parley_session* register_session(std::shared_ptr<parley_session> handle);

// Throws Error(invalid_argument) for NULL, Error(misuse) for a closed or foreign handle.
std::shared_ptr<parley_engine> acquire(parley_engine* e);
std::shared_ptr<parley_session> acquire(parley_session* s);

// Removes a handle from the registry; returns it (empty when it was not live), so the caller
// drops the last reference outside the registry's lock.
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

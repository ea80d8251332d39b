#include "api/handles.h"

#include <mutex>
#include <unordered_map>

#include "common/error.h"

namespace parley::api {
namespace {

template <typename Handle>
class Registry {
 public:
  Handle* add(std::shared_ptr<Handle> h) {
    Handle* key = h.get();
    std::lock_guard lock(mutex_);
    live_.emplace(key, std::move(h));
    return key;
  }

  std::shared_ptr<Handle> find(Handle* key, const char* kind) {
    if (!key) fail(Status::invalid_argument, std::string(kind) + " handle is NULL");
    std::lock_guard lock(mutex_);
    auto it = live_.find(key);
    if (it == live_.end()) {
      // "an engine", "a session"
      const std::string article = kind[0] == 'e' ? "an " : "a ";
      fail(Status::misuse, std::string(kind) + " handle is closed or not " + article + kind);
    }
    return it->second;
  }

  std::shared_ptr<Handle> remove(Handle* key) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(key);
    if (it == live_.end()) return nullptr;
    auto h = std::move(it->second);
    live_.erase(it);
    return h;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<Handle*, std::shared_ptr<Handle>> live_;
};

// Function-local statics: constructed on first use, never destroyed before other statics
// that might close handles at exit.
Registry<parley_engine>& engines() {
  static auto* r = new Registry<parley_engine>();
  return *r;
}

Registry<parley_session>& sessions() {
  static auto* r = new Registry<parley_session>();
  return *r;
}

}  // namespace

parley_engine* register_engine(std::shared_ptr<parley_engine> h) { return engines().add(std::move(h)); }
parley_session* register_session(std::shared_ptr<parley_session> h) { return sessions().add(std::move(h)); }
std::shared_ptr<parley_engine> acquire(parley_engine* e) { return engines().find(e, "engine"); }
std::shared_ptr<parley_session> acquire(parley_session* s) { return sessions().find(s, "session"); }
std::shared_ptr<parley_engine> unregister(parley_engine* e) { return engines().remove(e); }
std::shared_ptr<parley_session> unregister(parley_session* s) { return sessions().remove(s); }

SessionUse::SessionUse(parley_session& s) : use_(s.session->try_use()) {
  if (!use_) fail(Status::busy, "the session is in use by another call (or its own callback)");
}

}  // namespace parley::api

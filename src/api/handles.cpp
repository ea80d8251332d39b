#include "api/handles.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>

#include "common/error.h"

namespace parley::api {
namespace {

// This process's id (for messages) and how many fork()s made it from the first process to
// load the library, which tells processes apart even where a pid is used again (a grandchild
// given its grandparent's pid): set when the first handle is made, and renewed in a child by
// the fork handler below, so the ownership check on every call is a load, not a system call.
std::atomic<pid_t> g_this_process{0};
std::atomic<uint64_t> g_fork_generation{0};

pid_t this_process() { return g_this_process.load(std::memory_order_relaxed); }
uint64_t fork_generation() { return g_fork_generation.load(std::memory_order_relaxed); }

template <typename Handle>
bool made_here(const Handle& h) {
  return h.owner_generation == fork_generation();
}

template <typename Handle>
[[noreturn]] void fail_inherited(const Handle& h, const char* kind) {
  fail(Status::misuse, std::string("this ") + kind + " was opened by process " +
                           std::to_string(h.owner) + "; after fork() a child opens its own engine");
}

template <typename Handle>
class Registry {
 public:
  Handle* add(std::shared_ptr<Handle> h) {
    Handle* key = h.get();
    h->owner = this_process();
    h->owner_generation = fork_generation();
    std::lock_guard lock(mutex_);
    live_.emplace(key, std::move(h));
    return key;
  }

  std::shared_ptr<Handle> find(Handle* key, const char* kind) {
    if (!key) fail(Status::invalid_argument, std::string(kind) + " handle is NULL");
    auto h = live(key);
    if (!h) {
      // "an engine", "a session"
      const std::string article = kind[0] == 'e' ? "an " : "a ";
      fail(Status::misuse, std::string(kind) + " handle is closed or not " + article + kind);
    }
    if (!made_here(*h)) fail_inherited(*h, kind);
    return h;
  }

  std::shared_ptr<Handle> remove(Handle* key) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(key);
    // A handle inherited through fork() stays registered and is never freed here: its engine's
    // threads, locks and store connection are the parent's, and destroying it would join
    // threads this process does not have and write the parent's sessions to the store. Its
    // memory is this process's copy of the parent's, and is leaked on purpose.
    if (it == live_.end() || !made_here(*it->second)) return nullptr;
    auto h = std::move(it->second);
    live_.erase(it);
    return h;
  }

  // fork() copies the registry as it is: held across it, the child's copy is whole and free.
  void hold_for_fork() { mutex_.lock(); }
  void release_after_fork() { mutex_.unlock(); }

 private:
  std::shared_ptr<Handle> live(Handle* key) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(key);
    return it == live_.end() ? nullptr : it->second;
  }

  std::mutex mutex_;
  std::unordered_map<Handle*, std::shared_ptr<Handle>> live_;
};

struct Registries {
  Registry<parley_engine> engines;
  Registry<parley_session> sessions;
};

// Never destroyed: statics that close handles at exit may run after this file's. Set before
// the fork handlers that read it are installed.
Registries* g_registries = nullptr;

// A thread of the parent may be inside a registry at fork() (a call starting or a close):
// each registry is held across fork(), always engines then sessions, so the child never finds
// a lock taken by a thread it does not have, nor a map half changed.
void before_fork() {
  g_registries->engines.hold_for_fork();
  g_registries->sessions.hold_for_fork();
}

void after_fork_in_parent() {
  g_registries->sessions.release_after_fork();
  g_registries->engines.release_after_fork();
}

void after_fork_in_child() {
  g_this_process.store(::getpid(), std::memory_order_relaxed);
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  after_fork_in_parent();
}

Registries& registries() {
  static Registries* const made = new Registries();
  static const bool fork_handlers_installed = [] {
    g_this_process.store(::getpid(), std::memory_order_relaxed);
    g_registries = made;
    // pthread_atfork fails only for want of memory; the next call tries again.
    if (pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) != 0) {
      throw std::bad_alloc();
    }
    return true;
  }();
  (void)fork_handlers_installed;
  return *made;
}

Registry<parley_engine>& engines() { return registries().engines; }
Registry<parley_session>& sessions() { return registries().sessions; }

}  // namespace

parley_engine* register_engine(std::shared_ptr<parley_engine> h) {
  return engines().add(std::move(h));
}
parley_session* register_session(std::shared_ptr<parley_session> h) {
  return sessions().add(std::move(h));
}
std::shared_ptr<parley_engine> acquire(parley_engine* e) { return engines().find(e, "engine"); }
std::shared_ptr<parley_session> acquire(parley_session* s) { return sessions().find(s, "session"); }
std::shared_ptr<parley_engine> unregister(parley_engine* e) { return engines().remove(e); }
std::shared_ptr<parley_session> unregister(parley_session* s) { return sessions().remove(s); }

SessionUse::SessionUse(parley_session& s) : use_(s.session->try_use()) {
  if (!use_) fail(Status::busy, "the session is in use by another call (or its own callback)");
}

}  // namespace parley::api

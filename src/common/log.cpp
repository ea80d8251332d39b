#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <system_error>
#include <thread>

namespace parley::log {
namespace {

struct Target {
  Sink sink = nullptr;  // nullptr: the default, stderr
  void* user = nullptr;
  const Target* older = nullptr;
};

// Installed at any time (a program may change it while lines are logged), read on every
// line. A target is never freed, as a concurrent writer may still be reading it; each links to
// the one it replaced, so that none is ever unreachable (a leak checker would report those).
std::atomic<Target*> g_target{nullptr};

thread_local bool t_library_thread = false;

}  // namespace

void mark_library_thread() { t_library_thread = true; }

void set_sink(Sink sink, void* user) {
  auto* target = new Target{sink, user, nullptr};
  target->older = g_target.exchange(target, std::memory_order_acq_rel);
}

void write(Level level, const std::string& msg) {
  const Target* target = g_target.load(std::memory_order_acquire);
  if (target && target->sink) {
    if (t_library_thread) {
      try {
        std::thread([&] { target->sink(level, msg.c_str(), target->user); }).join();
        return;
      } catch (const std::system_error&) {  // no thread to be had: the line is not dropped
      }
    }
    target->sink(level, msg.c_str(), target->user);
    return;
  }
  if (level <= warn) {
    std::fprintf(stderr, "parley: %s: %s\n", level == error ? "error" : "warning", msg.c_str());
  }
}

}  // namespace parley::log

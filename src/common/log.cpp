#include "common/log.h"

#include <atomic>
#include <cstdio>

namespace parley::log {
namespace {

struct Target {
  Sink sink = nullptr;
  void* user = nullptr;
};

// Installed once before engines open (documented), read on every log line.
std::atomic<Target*> g_target{nullptr};

}  // namespace

void set_sink(Sink sink, void* user) {
  // The previous target is leaked on purpose: a concurrent writer may still be reading it.
  g_target.store(sink ? new Target{sink, user} : nullptr, std::memory_order_release);
}

void write(Level level, const std::string& msg) {
  const Target* target = g_target.load(std::memory_order_acquire);
  if (target) {
    target->sink(level, msg.c_str(), target->user);
    return;
  }
  if (level <= warn) {
    std::fprintf(stderr, "parley: %s: %s\n", level == error ? "error" : "warning", msg.c_str());
  }
}

}  // namespace parley::log

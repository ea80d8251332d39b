#include "engine/janitor.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "engine/clock.h"
#include "engine/engine.h"

namespace parley::engine {

Janitor::Janitor(Engine& engine, uint32_t idle_ms)
    : engine_(engine), idle_ms_(idle_ms), thread_([this] { run(); }) {}

Janitor::~Janitor() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Janitor::run() {
  log::mark_library_thread();
  // Checking four times per idle period spills a session at most a quarter period late.
  const auto period = std::chrono::milliseconds(std::max<uint32_t>(1, idle_ms_ / 4));
  // A store that refuses spills (a full disk) would have every idle session's KV encoded
  // again, and a warning logged, each pass: after a failed pass the next waits twice as long,
  // up to a minute (or the period, if longer), until a pass fails no spill.
  const auto longest = std::max<std::chrono::milliseconds>(period, std::chrono::minutes(1));
  auto wait = period;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, wait, [this] { return stop_; })) {
    lock.unlock();
    size_t failed = 0;
    try {
      failed = engine_.spill_idle(now_ms() - idle_ms_);
    } catch (...) {  // out of memory even for a log line: the next pass tries again
    }
    wait = failed ? std::min(wait * 2, longest) : period;
    lock.lock();
  }
}

}  // namespace parley::engine

// The library's warnings and errors while one of these lives, from any thread; a test may wait
// for one that says something.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "common/log.h"

namespace parley::test {

class LogCapture {
 public:
  LogCapture() { log::set_sink(&LogCapture::sink, this); }
  ~LogCapture() { log::set_sink(nullptr, nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The lines so far, each followed by a newline; "" when none came.
  std::string text() {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& line : lines_) all += line + "\n";
    return all;
  }
  // How many lines so far hold `part`.
  int count(const std::string& part) {
    std::lock_guard lock(mutex_);
    return count_locked(part);
  }
  // False when no line holding `part` came (a generous bound, so that a failing test ends
  // instead of hanging).
  bool wait_for(const std::string& part) {
    std::unique_lock lock(mutex_);
    return logged_.wait_for(lock, std::chrono::seconds(30), [&] { return count_locked(part); });
  }

 private:
  static void sink(int level, const char* message, void* user) {
    if (level > log::warn) return;
    auto* self = static_cast<LogCapture*>(user);
    std::lock_guard lock(self->mutex_);
    self->lines_.emplace_back(message);
    self->logged_.notify_all();
  }
  int count_locked(const std::string& part) const {
    int n = 0;
    for (const auto& line : lines_) n += line.find(part) != std::string::npos;
    return n;
  }

  std::mutex mutex_;
  std::condition_variable logged_;
  std::vector<std::string> lines_;
};

}  // namespace parley::test

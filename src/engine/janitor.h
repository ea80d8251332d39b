// The janitor: a background thread that spills sessions idle for longer than idle_spill_ms,
// so memory goes to the conversations in use.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace parley::engine {

class Engine;

class Janitor {
 public:
  Janitor(Engine& engine, uint32_t idle_ms);
  ~Janitor();  // stops and joins the thread
  Janitor(const Janitor&) = delete;
  Janitor& operator=(const Janitor&) = delete;

 private:
  void run();

  Engine& engine_;
  uint32_t idle_ms_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything it reads
};

}  // namespace parley::engine

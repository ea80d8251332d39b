// A fixed set of worker threads that split a range of work into contiguous chunks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace parley::backend::cpu {

class ThreadPool {
 public:
  using RangeFn = std::function<void(size_t begin, size_t end)>;

  // n_threads: how many threads run tasks, the calling thread included (so n_threads - 1
  // workers are started); 0 = std::thread::hardware_concurrency().
  // Throws Error(invalid_argument) for a negative count.
  explicit ThreadPool(int32_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // Calls fn on contiguous sub-ranges that together cover [0, n) exactly once, on the workers
  // and the calling thread, and returns when all are done. The first exception thrown by a
  // task is rethrown here (chunks not yet started are skipped). Calls from several threads
  // are serialized; a call from inside a task runs the whole range inline.
  void parallel_for(size_t n, const RangeFn& fn);

 private:
  void worker_loop();
  void run_chunks();  // claims and runs chunks of the current job until none are left

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time

  // The current job. Written under mutex_ only while no worker is busy.
  const RangeFn* fn_ = nullptr;
  size_t n_ = 0;
  size_t n_chunks_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::exception_ptr error_;  // guarded by mutex_

  std::mutex mutex_;
  std::condition_variable wake_;  // workers: a new job or stop
  std::condition_variable idle_;  // caller: busy_ dropped to 0
  uint64_t generation_ = 0;       // bumped per job
  size_t busy_ = 0;               // workers inside run_chunks()
  bool stop_ = false;
};

}  // namespace parley::backend::cpu

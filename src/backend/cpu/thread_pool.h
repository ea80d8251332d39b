// A fixed set of worker threads that split a range of work into contiguous chunks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace parley::backend::cpu {

class ThreadPool {
 public:
  // n_threads: how many threads run tasks, the calling thread included (so n_threads - 1
  // workers are started); 0 = std::thread::hardware_concurrency().
  // Throws Error(invalid_argument) for a negative count.
  explicit ThreadPool(int32_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // Calls fn(begin, end) on contiguous sub-ranges that together cover [0, n) exactly once,
  // on the workers and the calling thread, and returns when all are done. The first
  // exception thrown by a task is rethrown here (chunks not yet started are skipped). Calls
  // from several threads are serialized; a call from inside a task runs the whole range
  // inline. fn is called through a plain pointer: no allocation per call.
  template <class Fn>
  void parallel_for(size_t n, const Fn& fn) {
    run(n, Task{&fn, [](const void* f, size_t begin, size_t end) {
                  (*static_cast<const Fn*>(f))(begin, end);
                }});
  }

 private:
  struct Task {
    const void* fn;
    void (*call)(const void* fn, size_t begin, size_t end);
  };

  void run(size_t n, Task task);
  void worker_loop();
  void run_chunks();          // claims and runs chunks of the current job until none are left
  uint32_t wait_for_job(uint32_t seen);  // spins, then sleeps, until the generation moves
  void wait_for_workers();    // spins, then sleeps, until every worker has left the job

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time

  // The current job, written by the caller before it bumps generation_ (release) and read
  // by workers after they see the new generation (acquire).
  Task task_{};
  size_t n_ = 0;
  size_t n_chunks_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;

  // Every worker takes part in every job (possibly finding no chunk left), so that none can
  // still be reading a job when the caller returns. generation_ announces a job (and stop);
  // pending_ counts the workers that have not finished it.
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> pending_{0};
  std::atomic<uint32_t> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  bool stop_ = false;  // read by workers after a generation bump
};

}  // namespace parley::backend::cpu

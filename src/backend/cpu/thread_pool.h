// A fixed set of worker threads that split a range of work into contiguous chunks, claimed
// as they go and shrinking towards the end of the range.
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
  // on the workers and the calling thread, and returns when all are done; a worker the OS
  // has not run by the time every chunk is taken is not waited for. The first
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
  void stop_workers() noexcept;  // wakes, stops and joins every worker
  void run_chunks();          // claims and runs chunks of the current job until none are left
  uint32_t wait_for_job(uint32_t seen);  // spins, then sleeps, until the generation moves
  bool join(uint32_t job);    // enters job `job` if it is still open
  void wait_for_joined();     // closes the job, then waits for the workers inside it

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time

  // The current job, written by the caller before it opens the job (release) and read only
  // by workers that joined it (acquire).
  Task task_{};
  size_t n_ = 0;
  std::atomic<size_t> next_{0};  // the first index no thread has claimed
  std::mutex error_mutex_;
  std::exception_ptr error_;

  // generation_ announces a job (and stop) to waiting workers. job_state_ holds the job's
  // generation (high 32 bits), a closed flag and how many workers are inside it. A worker
  // runs chunks only after joining an open job; the caller, once no chunk is left, closes it
  // and waits only for the workers inside. So a worker that the OS has not scheduled yet
  // never holds up a job (the caller runs its chunks), and finds the job closed when it
  // wakes.
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> job_state_{0};
  std::atomic<uint32_t> sleeping_workers_{0};
  std::atomic<bool> stop_{false};  // read by workers after a generation bump
};

}  // namespace parley::backend::cpu

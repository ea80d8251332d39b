#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.h"
#include "common/log.h"
#include "common/thread_count.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace parley::backend::cpu {
namespace {

// Chunks shrink as the range is used up ("guided"): each takes this fraction of what is left
// divided by the thread count, at least one index. Long first chunks keep each thread's reads
// sequential; the last ones are single indexes, so threads finish within one of each other
// even when a thread started late or runs slower (uneven causal attention rows, a busy core).
constexpr size_t kShareDivisor = 2;

// A decode step issues a few parallel regions per layer with microseconds of serial work
// between them: waiting threads spin this long before they sleep, so that the next region
// finds them awake instead of paying a futex wake-up (tens of microseconds) each time.
constexpr auto kSpinTime = std::chrono::microseconds(200);

// job_state_ below the generation: a closed flag and the count of workers inside.
constexpr uint64_t kClosed = uint64_t(1) << 31;
constexpr uint64_t kInside = kClosed - 1;

thread_local bool t_inside_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpinTime has passed; true if done() became true.
template <class Done>
bool spin_until(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int32_t n_threads) {
  require(n_threads >= 0, Status::invalid_argument,
          "thread count must be 0 (one per core) or positive, got " + std::to_string(n_threads));
  const size_t total = resolved_thread_count(n_threads);
  workers_.reserve(total - 1);
  try {
    for (size_t i = 0; i + 1 < total; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    stop_workers();  // a joinable std::thread left to its destructor would terminate
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() noexcept {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run(size_t n, Task task) {
  if (n == 0) return;
  if (t_inside_task || workers_.empty() || n == 1) {
    task.call(task.fn, 0, n);
    return;
  }
  std::lock_guard call(call_mutex_);
  task_ = task;
  n_ = n;
  next_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  const uint32_t job = generation_.load(std::memory_order_relaxed) + 1;
  job_state_.store(uint64_t(job) << 32, std::memory_order_release);  // open, nobody inside
  // seq_cst: the bump and the sleeper check pair with the worker's "count myself as
  // sleeping, then re-check the generation", so a sleeping worker is always woken.
  generation_.store(job, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  run_chunks();
  wait_for_joined();
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::run_chunks() {
  t_inside_task = true;
  const size_t share = size() * kShareDivisor;
  size_t begin = next_.load(std::memory_order_relaxed);
  for (;;) {
    if (begin >= n_) break;
    const size_t end = begin + std::max<size_t>(1, (n_ - begin) / share);
    if (!next_.compare_exchange_weak(begin, end, std::memory_order_relaxed)) continue;
    try {
      task_.call(task_.fn, begin, end);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_, std::memory_order_relaxed);  // skip what has not started
    }
    begin = next_.load(std::memory_order_relaxed);
  }
  t_inside_task = false;
}

uint32_t ThreadPool::wait_for_job(uint32_t seen) {
  uint32_t now = seen;
  const auto moved = [&] {
    now = generation_.load(std::memory_order_acquire);
    return now != seen;
  };
  while (!spin_until(moved)) {
    sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
    generation_.wait(seen, std::memory_order_acquire);
    sleeping_workers_.fetch_sub(1, std::memory_order_seq_cst);
  }
  return now;
}

bool ThreadPool::join(uint32_t job) {
  uint64_t state = job_state_.load(std::memory_order_acquire);
  for (;;) {
    if (uint32_t(state >> 32) != job || (state & kClosed) != 0) return false;
    if (job_state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire)) {
      return true;
    }
  }
}

void ThreadPool::wait_for_joined() {
  job_state_.fetch_or(kClosed, std::memory_order_acq_rel);
  // The workers inside are running their last chunks: spin, then yield the core to them.
  const auto done = [&] { return (job_state_.load(std::memory_order_acquire) & kInside) == 0; };
  while (!spin_until(done)) std::this_thread::yield();
}

void ThreadPool::worker_loop() {
  log::mark_library_thread();
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    if (!join(seen)) continue;  // the caller already finished this job
    run_chunks();
    job_state_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace parley::backend::cpu

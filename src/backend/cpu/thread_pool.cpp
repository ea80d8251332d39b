#include "backend/cpu/thread_pool.h"

#include <algorithm>

#include "common/error.h"

namespace parley::backend::cpu {
namespace {

// Several chunks per thread so that uneven tasks (causal attention rows) still balance.
constexpr size_t kChunksPerThread = 4;

thread_local bool t_inside_task = false;

}  // namespace

ThreadPool::ThreadPool(int32_t n_threads) {
  require(n_threads >= 0, Status::invalid_argument,
          "thread count must be 0 (one per core) or positive, got " + std::to_string(n_threads));
  size_t total = n_threads > 0 ? size_t(n_threads) : std::thread::hardware_concurrency();
  total = std::max<size_t>(total, 1);
  workers_.reserve(total - 1);
  for (size_t i = 0; i + 1 < total; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::parallel_for(size_t n, const RangeFn& fn) {
  if (n == 0) return;
  if (t_inside_task || workers_.empty() || n == 1) {
    fn(0, n);
    return;
  }
  std::lock_guard call(call_mutex_);
  {
    std::unique_lock lock(mutex_);
    // A worker that woke late for the previous job may still be leaving it.
    idle_.wait(lock, [&] { return busy_ == 0; });
    fn_ = &fn;
    n_ = n;
    n_chunks_ = std::min(n, size() * kChunksPerThread);
    next_chunk_.store(0);
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    // Every chunk is claimed once the caller's run_chunks() returns; the busy workers hold
    // the ones still running.
    idle_.wait(lock, [&] { return busy_ == 0; });
    error = error_;
    fn_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::run_chunks() {
  t_inside_task = true;
  for (;;) {
    const size_t c = next_chunk_.fetch_add(1);
    if (c >= n_chunks_) break;
    // Chunk c covers [c * n / chunks, (c + 1) * n / chunks): sizes differ by at most one.
    const size_t begin = c * n_ / n_chunks_;
    const size_t end = (c + 1) * n_ / n_chunks_;
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_chunk_.store(n_chunks_);  // skip what has not started
    }
  }
  t_inside_task = false;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    lock.unlock();
    run_chunks();
    lock.lock();
    if (--busy_ == 0) idle_.notify_all();
  }
}

}  // namespace parley::backend::cpu

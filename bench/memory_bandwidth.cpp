#include "memory_bandwidth.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace parley::bench {
namespace {

// GCC would turn these loops into memset/memcpy calls, whose non-temporal stores are not what
// STREAM's copy kernel measures; keep them plain loops.
#pragma GCC push_options
#pragma GCC optimize("no-tree-loop-distribute-patterns")
void copy_doubles(const double* __restrict a, double* __restrict c, size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i];
}

void fill_doubles(double* p, size_t n, double v) {
  for (size_t i = 0; i < n; ++i) p[i] = v;
}
#pragma GCC pop_options

template <class Fn>
void on_threads(int threads, const Fn& fn) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
  fn(0);
  for (auto& th : pool) th.join();
}

}  // namespace

CopyBandwidth measure_copy_bandwidth(size_t array_bytes, int threads, int runs) {
  threads = std::max(1, threads);
  const size_t n = array_bytes / sizeof(double);
  std::unique_ptr<double[]> a(new double[n]), c(new double[n]);
  const size_t per_thread = (n + size_t(threads) - 1) / size_t(threads);
  auto slice = [&](int t, auto&& fn) {
    const size_t begin = std::min(n, size_t(t) * per_thread);
    const size_t end = std::min(n, begin + per_thread);
    fn(begin, end - begin);
  };
  // Each thread first touches the pages it will copy, so they sit near it.
  on_threads(threads, [&](int t) {
    slice(t, [&](size_t b, size_t len) {
      fill_doubles(a.get() + b, len, 1.0);
      fill_doubles(c.get() + b, len, 0.0);
    });
  });

  double best_s = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    on_threads(threads, [&](int t) {
      slice(t, [&](size_t b, size_t len) { copy_doubles(a.get() + b, c.get() + b, len); });
    });
    best_s = std::min(
        best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  CopyBandwidth bw;
  bw.array_bytes = n * sizeof(double);
  bw.threads = threads;
  bw.gb_per_s = 2.0 * double(bw.array_bytes) / best_s / 1e9;
  return bw;
}

CopyBandwidth measure_copy_bandwidth_in_child(size_t array_bytes, int threads, int runs) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error("pipe failed: " + std::string(std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    const CopyBandwidth bw = measure_copy_bandwidth(array_bytes, threads, runs);
    const bool ok = ::write(fds[1], &bw, sizeof bw) == ssize_t(sizeof bw);
    ::_exit(ok ? 0 : 1);  // no static destructors or stdio flushes of the parent's state
  }
  ::close(fds[1]);
  CopyBandwidth bw;
  const ssize_t got = ::read(fds[0], &bw, sizeof bw);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got != ssize_t(sizeof bw) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the memory bandwidth child process failed");
  }
  return bw;
}

}  // namespace parley::bench

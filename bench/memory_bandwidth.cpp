#include "memory_bandwidth.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
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

// Reads the n doubles as integers, 32 at a time into four independent vector sums, so that
// neither a dependency chain nor floating-point rounding order slows the loop (a clone per
// x86 vector width); a tail of fewer than 32 is not read. The result goes to read_sink, only
// so that the loop is not removed. Words may alias the doubles and needs their alignment only.
// hinted: each line is also asked for kReadAhead doubles before it is read (prefetchnta), as
// the decode products ask for their weights.
using Words = uint64_t __attribute__((vector_size(64), may_alias, aligned(8)));

volatile uint64_t read_sink = 0;

// Doubles ahead (4 KiB) that a hinted read pass asks for: some machines' hardware prefetchers
// keep too few lines in flight for one core, and the decode products ask ahead themselves.
constexpr size_t kReadAhead = 512;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
uint64_t read_words(const double* p, size_t n, bool hinted) {
  Words s0 = {}, s1 = {}, s2 = {}, s3 = {};
  for (size_t i = 0; i + 32 <= n; i += 32) {
    if (hinted) {
      for (size_t line = 0; line < 32; line += 8) {
        __builtin_prefetch(p + i + kReadAhead + line, 0, 0);
      }
    }
    const Words* w = reinterpret_cast<const Words*>(p + i);
    s0 += w[0];
    s1 += w[1];
    s2 += w[2];
    s3 += w[3];
  }
  const Words s = s0 + s1 + s2 + s3;
  uint64_t total = 0;
  for (int j = 0; j < 8; ++j) total += s[j];
  return total;
}

template <class Fn>
void on_threads(int threads, const Fn& fn) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
  fn(0);
  for (auto& th : pool) th.join();
}

// The child's side: the figures on success, else the reason as text, through `fd`. It must
// never return: an exception let out here would unwind through the parent's code in the child.
[[noreturn]] void run_copy_in_child(int fd, size_t array_bytes, int threads, int runs) {
  std::string reply;
  int code = 0;
  try {
    const CopyBandwidth bw = measure_copy_bandwidth(array_bytes, threads, runs);
    reply.assign(reinterpret_cast<const char*>(&bw), sizeof bw);
  } catch (const std::bad_alloc&) {
    reply = "not enough memory for the arrays";
    code = 1;
  } catch (const std::exception& e) {
    reply = e.what();
    code = 1;
  }
  const bool sent = ::write(fd, reply.data(), reply.size()) == ssize_t(reply.size());
  ::_exit(sent ? code : 1);  // no static destructors or stdio flushes of the parent's state
}

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return text;
    text.append(buf, size_t(got));
  }
}

// Why the child failed, from what it said or else from how it ended.
std::string child_failure(int status, const std::string& said) {
  if (!said.empty()) return said;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) +
           (sig == SIGKILL ? ", as from the out-of-memory killer)" : ")");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return "it sent no figures";
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
  double best_read_s = 1e30;
  std::vector<uint64_t> sinks(size_t(threads), 0);
  // A read pass takes half as long: twice the runs, plain and hinted in turn.
  for (int r = 0; r < 2 * runs; ++r) {
    const bool hinted = r % 2 == 1;
    const auto start = std::chrono::steady_clock::now();
    on_threads(threads, [&](int t) {
      slice(t, [&](size_t b, size_t len) {
        sinks[size_t(t)] += read_words(a.get() + b, len, hinted);
      });
    });
    best_read_s = std::min(
        best_read_s,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  CopyBandwidth bw;
  bw.array_bytes = n * sizeof(double);
  bw.threads = threads;
  bw.gb_per_s = 2.0 * double(bw.array_bytes) / best_s / 1e9;
  size_t read_bytes = 0;  // whole groups of 32 values per thread
  for (int t = 0; t < threads; ++t) {
    slice(t, [&](size_t, size_t len) { read_bytes += len / 32 * 32 * sizeof(double); });
  }
  bw.read_gb_per_s = double(read_bytes) / best_read_s / 1e9;
  read_sink = std::accumulate(sinks.begin(), sinks.end(), uint64_t(0));
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
    run_copy_in_child(fds[1], array_bytes, threads, runs);
  }
  ::close(fds[1]);
  const std::string reply = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const bool exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (exited_ok && reply.size() == sizeof(CopyBandwidth)) {
    CopyBandwidth bw;
    std::memcpy(&bw, reply.data(), sizeof bw);
    return bw;
  }
  const int n_threads = std::max(1, threads);
  char what[160];
  std::snprintf(what, sizeof what,
                "the memory bandwidth child process (two arrays of %zu MiB, %d thread%s) failed: ",
                array_bytes >> 20, n_threads, n_threads == 1 ? "" : "s");
  throw std::runtime_error(what + child_failure(status, exited_ok ? "" : reply));
}

}  // namespace parley::bench

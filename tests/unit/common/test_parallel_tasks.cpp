// run_tasks: every index once, on more than one thread when asked.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/parallel_tasks.h"

namespace parley::test {

TEST_CASE("run_tasks runs every index exactly once, for any count of tasks and threads") {
  for (size_t n : {0u, 1u, 7u, 1000u}) {
    for (size_t threads : {0u, 1u, 2u, 8u}) {
      CAPTURE(n);
      CAPTURE(threads);
      std::vector<std::atomic<int>> runs(n);
      run_tasks(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) CHECK(runs[i].load() == 1);
    }
  }
}

TEST_CASE("run_tasks runs tasks side by side") {
  // Each of the two tasks waits for the other to start: one thread alone would never see
  // both (it gives up after a while so that a failure does not hang).
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  run_tasks(2, 2, [&](size_t) {
    started.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    if (started.load() == 2) met.fetch_add(1);
  });
  CHECK(met.load() == 2);
}

}  // namespace parley::test

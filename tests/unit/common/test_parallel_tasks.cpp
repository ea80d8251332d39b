// run_tasks: every index once, on more than one thread when asked.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
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
      const auto errors = run_tasks(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
      REQUIRE(errors.size() == n);
      for (size_t i = 0; i < n; ++i) {
        CHECK(runs[i].load() == 1);
        CHECK(!errors[i]);
      }
    }
  }
}

TEST_CASE("run_tasks returns what each task threw, by index, and runs the others") {
  std::vector<std::atomic<int>> runs(50);
  const auto errors = run_tasks(50, 3, [&](size_t i) {
    runs[i].fetch_add(1);
    if (i % 7 == 3) throw std::runtime_error("task " + std::to_string(i));
  });
  REQUIRE(errors.size() == 50);
  for (size_t i = 0; i < 50; ++i) {
    CAPTURE(i);
    CHECK(runs[i].load() == 1);
    REQUIRE(bool(errors[i]) == (i % 7 == 3));
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "task " + std::to_string(i));
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

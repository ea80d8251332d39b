#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "common/error.h"

namespace parley::backend::cpu {

TEST_CASE("parallel_for covers [0, n) exactly once with contiguous ranges") {
  for (int32_t threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == size_t(threads));
    for (size_t n : {0u, 1u, 2u, 5u, 64u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> empty_ranges{0};
      pool.parallel_for(n, [&](size_t begin, size_t end) {
        if (begin >= end) empty_ranges++;
        for (size_t i = begin; i < end; ++i) hits[i]++;
      });
      CHECK(empty_ranges == 0);
      for (size_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
    }
  }
}

TEST_CASE("parallel_for uses the workers and the calling thread") {
  ThreadPool pool(4);
  std::mutex m;
  std::vector<std::thread::id> seen;
  std::atomic<int> arrived{0};
  // Every chunk waits until four have started, so four threads must have run chunks.
  pool.parallel_for(4, [&](size_t, size_t) {
    arrived++;
    while (arrived < 4) std::this_thread::yield();
    std::lock_guard lock(m);
    seen.push_back(std::this_thread::get_id());
  });
  std::sort(seen.begin(), seen.end());
  CHECK(std::unique(seen.begin(), seen.end()) - seen.begin() == 4);
}

TEST_CASE("chunks shrink towards the end of the range, down to single indexes") {
  ThreadPool pool(2);
  std::mutex m;
  std::vector<std::pair<size_t, size_t>> chunks;
  pool.parallel_for(1000, [&](size_t begin, size_t end) {
    std::lock_guard lock(m);
    chunks.emplace_back(begin, end);
  });
  std::sort(chunks.begin(), chunks.end());
  REQUIRE(!chunks.empty());
  CHECK(chunks.front().first == 0);
  CHECK(chunks.back().second == 1000);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    CHECK(chunks[i].second == chunks[i + 1].first);  // contiguous, no overlap
    // Claimed in order, each at most a quarter of what was left (2 threads x 2).
    CHECK(chunks[i + 1].second - chunks[i + 1].first <= std::max<size_t>(1, (1000 - chunks[i + 1].first) / 4));
  }
  CHECK(chunks.front().second == 250);
  CHECK(chunks.back().second - chunks.back().first == 1);
}

TEST_CASE("an exception in a task reaches the caller and the pool keeps working") {
  ThreadPool pool(3);
  CHECK_THROWS_WITH_AS(pool.parallel_for(100,
                                         [](size_t begin, size_t end) {
                                           if (begin <= 50 && 50 < end)
                                             throw std::runtime_error("task 50");
                                         }),
                       "task 50", std::runtime_error);
  std::atomic<size_t> sum{0};
  pool.parallel_for(100, [&](size_t begin, size_t end) { sum += end - begin; });
  CHECK(sum == 100);
}

TEST_CASE("nested parallel_for runs inline; many short jobs finish; counts are validated") {
  ThreadPool pool(3);
  std::atomic<size_t> total{0};
  pool.parallel_for(8, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      pool.parallel_for(10, [&](size_t b, size_t e) { total += e - b; });
    }
  });
  CHECK(total == 80);
  for (int round = 0; round < 2000; ++round) {
    std::atomic<size_t> n{0};
    pool.parallel_for(5, [&](size_t b, size_t e) { n += e - b; });
    REQUIRE(n == 5);
  }
  CHECK_THROWS_AS(ThreadPool(-1), Error);
  CHECK(ThreadPool(0).size() >= 1);
}

TEST_CASE("calls from several threads are serialized") {
  ThreadPool pool(2);
  std::atomic<size_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        pool.parallel_for(7, [&](size_t b, size_t e) { total += e - b; });
    });
  }
  for (auto& t : callers) t.join();
  CHECK(total == 4 * 200 * 7);
}

}  // namespace parley::backend::cpu

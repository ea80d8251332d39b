#include "common/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace parley {

void run_tasks(size_t n, size_t threads, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) task(i);
  };
  std::vector<std::thread> helpers;
  try {
    const size_t wanted = std::min(threads, n);
    if (wanted > 1) helpers.reserve(wanted - 1);
    while (helpers.size() + 1 < wanted) helpers.emplace_back(work);
  } catch (...) {
    // Out of threads or memory: those started and this one share the work.
  }
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace parley

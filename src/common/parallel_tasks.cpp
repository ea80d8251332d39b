#include "common/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace parley {

std::vector<std::exception_ptr> run_tasks(size_t n, size_t threads,
                                          const std::function<void(size_t)>& task) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
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
  return errors;
}

}  // namespace parley

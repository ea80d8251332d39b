// Short bursts of independent work on a few threads of their own, outside the backend's pool
// (which the CUDA backend does not have): decoding the KV blocks of a restored conversation.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace parley {

// Runs task(i) for every i in [0, n) on up to `threads` threads, the calling thread included,
// each claiming the next index, and returns when all are done: what each task threw, by index
// (null where it finished). When no further thread can be started, the threads already
// running (at least the caller) do it all.
std::vector<std::exception_ptr> run_tasks(size_t n, size_t threads,
                                          const std::function<void(size_t)>& task);

}  // namespace parley

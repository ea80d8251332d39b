// What a thread count of 0 ("one per core") stands for, decided in one place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace parley {

// The cores the system reports; at least 1, since hardware_concurrency() may report 0.
inline size_t core_count() { return std::max(1u, std::thread::hardware_concurrency()); }

// `requested` when positive, else one thread per core.
inline size_t resolved_thread_count(int64_t requested) {
  return requested > 0 ? size_t(requested) : core_count();
}

}  // namespace parley

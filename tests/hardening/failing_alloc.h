// Allocation failures on demand, for the whole test process: every operator new (all forms)
// and SQLite's own allocator go through one counter. Armed with n, the n-th allocation from
// then on fails: operator new throws std::bad_alloc, the nothrow forms and SQLite's malloc
// return NULL. `sticky` makes every later allocation fail too, until disarm(), as when memory
// stays short. Only the binary that links failing_alloc.cpp is affected.
#pragma once

#include <cstdint>

namespace parley::test {

// Routes SQLite's allocations through the counter; call before SQLite is first used.
void install_failing_sqlite_malloc();

void arm_allocation_failure(uint64_t n, bool sticky);
// Stops failing; returns how many allocations were counted since arming.
uint64_t disarm_allocation_failure();
// Whether an armed failure has fired.
bool allocation_failure_fired();

// While one lives, allocations on this thread are neither counted nor failed.
class PauseAllocationFailures {
 public:
  PauseAllocationFailures();
  ~PauseAllocationFailures();
  PauseAllocationFailures(const PauseAllocationFailures&) = delete;
  PauseAllocationFailures& operator=(const PauseAllocationFailures&) = delete;
};

}  // namespace parley::test

#include "failing_alloc.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace parley::test {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<bool> g_sticky{false};
std::atomic<bool> g_fired{false};
std::atomic<uint64_t> g_count{0};
std::atomic<uint64_t> g_fail_at{0};

thread_local int t_paused = 0;

// Counts one allocation; true when it must fail.
bool should_fail() {
  if (!g_armed.load(std::memory_order_relaxed) || t_paused > 0) return false;
  const uint64_t n = g_count.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t at = g_fail_at.load(std::memory_order_relaxed);
  if (n == at || (n > at && g_sticky.load(std::memory_order_relaxed))) {
    g_fired.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

sqlite3_mem_methods g_sqlite_default{};

void* sqlite_malloc(int n) { return should_fail() ? nullptr : g_sqlite_default.xMalloc(n); }
void* sqlite_realloc(void* p, int n) {
  return should_fail() ? nullptr : g_sqlite_default.xRealloc(p, n);
}

void* allocate(std::size_t n) {
  if (should_fail()) return nullptr;
  return std::malloc(n ? n : 1);
}

void* allocate_aligned(std::size_t n, std::align_val_t al) {
  if (should_fail()) return nullptr;
  const std::size_t a = std::max<std::size_t>(std::size_t(al), sizeof(void*));
  void* p = nullptr;
  return ::posix_memalign(&p, a, n ? n : 1) == 0 ? p : nullptr;
}

}  // namespace

void install_failing_sqlite_malloc() {
  sqlite3_shutdown();  // SQLITE_CONFIG_MALLOC is refused once SQLite is initialized
  sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_sqlite_default);
  sqlite3_mem_methods methods = g_sqlite_default;
  methods.xMalloc = sqlite_malloc;
  methods.xRealloc = sqlite_realloc;
  sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
  sqlite3_initialize();
}

void arm_allocation_failure(uint64_t n, bool sticky) {
  g_count = 0;
  g_fired = false;
  g_fail_at = n;
  g_sticky = sticky;
  g_armed = true;
}

uint64_t disarm_allocation_failure() {
  g_armed = false;
  return g_count.load();
}

bool allocation_failure_fired() { return g_fired.load(); }

PauseAllocationFailures::PauseAllocationFailures() { ++t_paused; }
PauseAllocationFailures::~PauseAllocationFailures() { --t_paused; }

}  // namespace parley::test

// The replaceable global allocation functions ([new.delete]); every other form forwards here.
using parley::test::allocate;
using parley::test::allocate_aligned;

void* operator new(std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  if (void* p = allocate_aligned(n, al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return allocate_aligned(n, al);
}
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return allocate_aligned(n, al);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// memory_room() and memory_limit() over folders laid out as /proc and /sys/fs/cgroup are:
// the system's available memory and swap, or less where a memory cgroup (v1 or v2) of the
// process or an ancestor has a limit; require_memory_room() refuses past it, naming both.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "common/memory_room.h"
#include "support/error_check.h"
#include "support/shared_assets.h"

namespace parley {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A root with 8 GB available and 1 GB of free swap, 16 GB in all.
void system_files(const test::TempDir& root) {
  put(root / "proc/meminfo",
      "MemTotal:       16000000 kB\nMemFree:         2000000 kB\n"
      "MemAvailable:    8000000 kB\nSwapTotal:       1000000 kB\nSwapFree:        1000000 kB\n");
}

constexpr uint64_t kSystemRoom = (8000000ull + 1000000ull) * 1024;

TEST_CASE("memory room: the system's available memory and free swap without a limiting cgroup") {
  test::TempDir root;
  system_files(root);
  SUBCASE("no cgroup file") {}
  SUBCASE("a v1 memory cgroup without a limit") {
    put(root / "proc/self/cgroup", "4:memory:/app\n1:cpu:/\n");
    put(root / "sys/fs/cgroup/memory/app/memory.limit_in_bytes", "9223372036854771712\n");
    put(root / "sys/fs/cgroup/memory/app/memory.usage_in_bytes", "1000\n");
  }
  SUBCASE("a v2 cgroup whose limit is max") {
    put(root / "proc/self/cgroup", "0::/app\n");
    put(root / "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
    put(root / "sys/fs/cgroup/app/memory.max", "max\n");
    put(root / "sys/fs/cgroup/app/memory.current", "1000\n");
  }
  const auto room = memory_room(root.path());
  REQUIRE(room);
  CHECK(room->bytes == kSystemRoom);
  CHECK(room->limited_by == "the system's available memory and swap");
  CHECK(mem_available_bytes(root.path()) == 8000000ull * 1024);
  CHECK(memory_limit(root.path()) == 16000000ull * 1024);
}

TEST_CASE("memory room: a v1 memory cgroup's limit less what it holds, its file pages free") {
  test::TempDir root;
  system_files(root);
  put(root / "proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/jobs/app\n0::/\n");
  const fs::path app = root / "sys/fs/cgroup/memory/jobs/app";
  put(app / "memory.limit_in_bytes", "500000000\n");
  put(app / "memory.usage_in_bytes", "300000000\n");
  put(app / "memory.stat",
      "cache 1\ninactive_file 1\nactive_file 1\ntotal_cache 150000000\n"
      "total_inactive_file 60000000\ntotal_active_file 40000000\n");
  put(root / "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const auto room = memory_room(root.path());
  REQUIRE(room);
  CHECK(room->bytes == 500000000ull - (300000000ull - 100000000ull));
  CHECK(room->limited_by == "the limit of the memory cgroup /jobs/app");
  CHECK(memory_limit(root.path()) == 500000000ull);

  SUBCASE("an ancestor's lower limit is the one that binds") {
    put(root / "sys/fs/cgroup/memory/jobs/memory.limit_in_bytes", "350000000\n");
    put(root / "sys/fs/cgroup/memory/jobs/memory.usage_in_bytes", "340000000\n");
    const auto tighter = memory_room(root.path());
    REQUIRE(tighter);
    CHECK(tighter->bytes == 10000000ull);  // no memory.stat: nothing counted as reclaimable
    CHECK(tighter->limited_by == "the limit of the memory cgroup /jobs");
    CHECK(memory_limit(root.path()) == 350000000ull);
  }
  SUBCASE("a group using more than its limit has no room") {
    put(app / "memory.usage_in_bytes", "900000000\n");
    CHECK(memory_room(root.path())->bytes == 0);
  }
}

TEST_CASE("memory room: a v2 cgroup, mounted alone or beside v1's") {
  test::TempDir root;
  system_files(root);
  put(root / "proc/self/cgroup", "0::/user.slice/game.scope\n");
  fs::path mount = root / "sys/fs/cgroup";
  SUBCASE("at /sys/fs/cgroup") {}
  SUBCASE("at /sys/fs/cgroup/unified") { mount /= "unified"; }
  put(mount / "cgroup.controllers", "cpu io memory pids\n");
  put(mount / "user.slice/memory.max", "max\n");
  put(mount / "user.slice/game.scope/memory.max", "2000000000\n");
  put(mount / "user.slice/game.scope/memory.current", "1200000000\n");
  put(mount / "user.slice/game.scope/memory.stat",
      "anon 900000000\nfile 300000000\nactive_file 100000000\ninactive_file 200000000\n");
  const auto room = memory_room(root.path());
  REQUIRE(room);
  CHECK(room->bytes == 2000000000ull - 900000000ull);
  CHECK(room->limited_by == "the limit of the memory cgroup /user.slice/game.scope");
  CHECK(memory_limit(root.path()) == 2000000000ull);
}

TEST_CASE("memory room: a container whose own group is the mount's root") {
  test::TempDir root;
  system_files(root);
  // The path names the group on the host; inside, the mount shows it as the root.
  put(root / "proc/self/cgroup", "0::/docker/0123abcd\n");
  put(root / "sys/fs/cgroup/cgroup.controllers", "memory\n");
  put(root / "sys/fs/cgroup/memory.max", "1000000000\n");
  put(root / "sys/fs/cgroup/memory.current", "250000000\n");
  const auto room = memory_room(root.path());
  REQUIRE(room);
  CHECK(room->bytes == 750000000ull);
  CHECK(room->limited_by == "the limit of the memory cgroup /");
}

TEST_CASE("memory room: without /proc/meminfo only a cgroup's limit is known") {
  test::TempDir root;
  CHECK_FALSE(memory_room(root.path()));
  put(root / "proc/self/cgroup", "4:memory:/app\n");
  put(root / "sys/fs/cgroup/memory/app/memory.limit_in_bytes", "300000000\n");
  put(root / "sys/fs/cgroup/memory/app/memory.usage_in_bytes", "100000000\n");
  const auto room = memory_room(root.path());
  REQUIRE(room);
  CHECK(room->bytes == 200000000ull);
  CHECK(room->limited_by == "the limit of the memory cgroup /app");
}

TEST_CASE("require_memory_room: more than the room is Error(out_of_memory) naming both sizes") {
  const auto room = memory_room();
  REQUIRE(room);
  const uint64_t too_much = room->bytes + (uint64_t(1) << 40);
  CHECK_PARLEY_ERROR(require_memory_room(too_much, "the test's weights"), Status::out_of_memory,
                     "the test's weights needs", "this process can take about",
                     room->limited_by, "PARLEY_MEMORY_CHECK=0");
  CHECK_NOTHROW(require_memory_room(1, "a byte"));
  ::setenv("PARLEY_MEMORY_CHECK", "0", 1);
  CHECK_NOTHROW(require_memory_room(too_much, "the test's weights"));
  ::unsetenv("PARLEY_MEMORY_CHECK");
}

}  // namespace
}  // namespace parley

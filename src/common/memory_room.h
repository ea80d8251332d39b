// How much more memory this process can take before the kernel swaps it out or kills it, so
// that a load too large for the machine (or for the container it runs in) is refused with a
// message instead of ending the process: an overcommitting kernel grants a large mapping and
// then kills the process as it is filled.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace parley {

struct MemoryRoom {
  uint64_t bytes = 0;
  std::string limited_by;  // "the system's available memory and swap", "the memory cgroup /x"
};

// MemAvailable of /proc/meminfo (read under `root`): what the kernel says a new allocation
// can still get without swapping; nullopt where there is no such line.
std::optional<uint64_t> mem_available_bytes(const std::filesystem::path& root = "/");

// The least of the system's MemAvailable plus free swap and, for each memory cgroup (v1 or
// v2) the process or one of its ancestors is in that has a limit, that limit less what the
// group holds that cannot be reclaimed (its usage less its file pages). Read under `root`
// (tests give a folder of their own). nullopt where neither can be read.
std::optional<MemoryRoom> memory_room(const std::filesystem::path& root = "/");

// The memory the process may use in all: physical memory, or less where a memory cgroup of
// the process limits it. Read under `root`.
uint64_t memory_limit(const std::filesystem::path& root = "/");

// Throws Error(out_of_memory) when `bytes` (and some headroom: a sixteenth, and 16 MiB) are
// more than memory_room() gives, for `what` ("the CPU backend's copy of the weights"),
// saying both sizes and what limits the room. Skipped when PARLEY_MEMORY_CHECK is "0", for a
// machine whose figures mislead.
void require_memory_room(uint64_t bytes, const std::string& what);

}  // namespace parley

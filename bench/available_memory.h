// How much memory the kernel says a new allocation can still get without swapping.
#pragma once

#include <cstdint>
#include <optional>

namespace parley::bench {

// MemAvailable from /proc/meminfo, in bytes; nullopt where there is no such line.
std::optional<uint64_t> mem_available_bytes();

}  // namespace parley::bench

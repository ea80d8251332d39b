// The process's peak resident memory so far.
#pragma once

#include <cstdint>

namespace parley::bench {

// Bytes, from getrusage; it covers everything the process ever held, including building
// synthetic weights.
uint64_t peak_rss_bytes();

}  // namespace parley::bench

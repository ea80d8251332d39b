// The process's peak resident memory so far.
#pragma once

namespace parley::bench {

// Megabytes (10^6 bytes), from getrusage; it covers everything the process ever held,
// including building synthetic weights.
double peak_rss_mb();

}  // namespace parley::bench

// A STREAM-style copy (c[i] = a[i]) to measure what memory can deliver on this machine: the
// physical limit that decode, which reads every weight once per token, is compared against;
// and a read-only pass over one array, closer to what decode does (it mostly reads).
#pragma once

#include <cstddef>

namespace parley::bench {

struct CopyBandwidth {
  double gb_per_s = 0;     // best of the runs; bytes read + bytes written, as STREAM counts
  double read_gb_per_s = 0;  // best of the runs of a read-only pass, plain or with software
                             // prefetch hints (0 where not measured)
  size_t array_bytes = 0;  // each of the two arrays
  int threads = 0;
};

// Two arrays of `array_bytes` each (far larger than the caches), split across `threads`.
CopyBandwidth measure_copy_bandwidth(size_t array_bytes, int threads, int runs);

// The same, in a child process: the arrays must not count in this process's peak RSS.
// fork copies only the calling thread: call it while no other thread of this process is at
// work (an engine between steps, its workers idle; glibc keeps malloc usable across fork, and
// the child only allocates, runs threads of its own and exits). Throws std::runtime_error
// saying why when the child fails (out of memory for the arrays, killed by a signal).
CopyBandwidth measure_copy_bandwidth_in_child(size_t array_bytes, int threads, int runs);

}  // namespace parley::bench

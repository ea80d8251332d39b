// The memory bandwidth decode figures are compared against: the GPU's own device-to-device
// copy when the engine runs on CUDA (the CPU copy loop says nothing about HBM), else the CPU
// copy loop. A CUDA run also writes one "device-ceilings" line with the cuBLAS bf16 matrix
// rate that prefill figures are compared against.
#pragma once

#include <optional>

#include "bench_args.h"
#include "json_lines.h"
#include "memory_bandwidth.h"

namespace parley::bench {

// On the CPU, throws std::invalid_argument when the copy loop's two --copy-mib arrays would not
// fit in MemAvailable, and std::runtime_error naming --copy-mib when its child process fails.
CopyBandwidth measure_bandwidth(const BenchArgs& args, JsonLines& out, int copy_runs);

// The CPU copy loop again, for figures measured on the CPU (nullopt on a CUDA device): a
// virtual machine's memory can run at half or twice the speed from one minute to the next,
// so a ratio is only as good as a bandwidth measured next to its timings.
std::optional<CopyBandwidth> measure_host_bandwidth_again(const BenchArgs& args, int copy_runs);

}  // namespace parley::bench

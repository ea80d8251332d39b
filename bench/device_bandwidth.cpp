#include "device_bandwidth.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "backend/cuda_loader.h"
#include "common/memory_room.h"

namespace parley::bench {
namespace {

constexpr int32_t kGemmSize = 8192;  // large enough to reach the matrix units' plateau

// The CUDA device the engine will take, or -1 when it runs on the CPU.
int32_t cuda_device_of(const std::string& device) {
  if (device == "cuda") return 0;
  if (device.starts_with("cuda:")) return std::stoi(device.substr(5));
  if (device == "auto" && backend::cuda_device_count() > 0) return 0;
  return -1;
}

// The copy loop's two arrays must fit beside what else runs: past MemAvailable they would
// only end in swapping or the out-of-memory killer.
constexpr double kMaxShareOfAvailable = 0.9;

void require_memory_for_copy_loop(const BenchArgs& args) {
  const auto available = mem_available_bytes();
  const double needed = 2.0 * double(uint64_t(args.copy_mib) << 20);
  if (!available || needed <= kMaxShareOfAvailable * double(*available)) return;
  char why[200];
  std::snprintf(why, sizeof why,
                "--copy-mib %u needs two arrays of that size, %.1f GB, but MemAvailable in "
                "/proc/meminfo is %.1f GB",
                args.copy_mib, needed / 1e9, double(*available) / 1e9);
  throw std::invalid_argument(why);
}

CopyBandwidth copy_in_child(const BenchArgs& args, int copy_runs) {
  try {
    return measure_copy_bandwidth_in_child(size_t(args.copy_mib) << 20, resolved_threads(args),
                                           copy_runs);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (--copy-mib " +
                             std::to_string(args.copy_mib) + ")");
  }
}

}  // namespace

CopyBandwidth measure_bandwidth(const BenchArgs& args, JsonLines& out, int copy_runs) {
  const int32_t device = cuda_device_of(args.device);
  if (device < 0) {
    require_memory_for_copy_loop(args);
    return copy_in_child(args, copy_runs);
  }
  const size_t bytes = size_t(args.copy_mib) << 20;
  const backend::CudaCeilings c = backend::measure_cuda_ceilings(device, bytes, kGemmSize);
  nlohmann::ordered_json line;
  line["scenario"] = "device-ceilings";
  line["backend"] = "cuda:" + std::to_string(device);
  line["device_name"] = c.device_name;
  line["copy_bytes"] = bytes;
  line["bandwidth_gbs"] = c.copy_gb_s;
  line["bf16_gemm_size"] = c.gemm_size;
  line["bf16_gemm_tflops"] = c.bf16_tflops;
  out.write(line);
  CopyBandwidth bw;
  bw.gb_per_s = c.copy_gb_s;
  bw.array_bytes = bytes;
  bw.threads = 0;
  return bw;
}

std::optional<CopyBandwidth> measure_host_bandwidth_again(const BenchArgs& args, int copy_runs) {
  if (cuda_device_of(args.device) >= 0) return std::nullopt;
  return copy_in_child(args, copy_runs);
}

}  // namespace parley::bench

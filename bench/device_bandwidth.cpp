#include "device_bandwidth.h"

#include <nlohmann/json.hpp>
#include <string>

#include "backend/cuda_loader.h"

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

}  // namespace

CopyBandwidth measure_bandwidth(const BenchArgs& args, JsonLines& out, int copy_runs) {
  const int32_t device = cuda_device_of(args.device);
  if (device < 0) {
    return measure_copy_bandwidth_in_child(size_t(args.copy_mib) << 20, resolved_threads(args),
                                           copy_runs);
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
  return measure_copy_bandwidth_in_child(size_t(args.copy_mib) << 20, resolved_threads(args),
                                         copy_runs);
}

}  // namespace parley::bench

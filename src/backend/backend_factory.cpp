#include <cctype>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "common/error.h"
#include "model/model_loader.h"

namespace parley::backend {
namespace {

// "cuda" or "cuda:N" with N a decimal device index.
bool is_cuda_device(std::string_view device) {
  if (device == "cuda") return true;
  constexpr std::string_view prefix = "cuda:";
  if (!device.starts_with(prefix) || device.size() == prefix.size()) return false;
  for (char c : device.substr(prefix.size())) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Backend> make_backend(std::string_view device, const model::LoadedModel& model,
                                      int32_t n_threads) {
  if (device.empty() || device == "auto" || device == "cpu") {
    return std::make_unique<cpu::CpuBackend>(model.config, model.weights, n_threads);
  }
  if (is_cuda_device(device)) fail(Status::unsupported, "this build has no CUDA backend yet");
  fail(Status::invalid_argument,
       "unknown device '" + std::string(device) + "' (expected auto, cpu, cuda or cuda:N)");
}

}  // namespace parley::backend

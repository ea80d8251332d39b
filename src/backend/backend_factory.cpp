#include <charconv>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda_loader.h"
#include "common/error.h"
#include "common/log.h"
#include "model/model_loader.h"
#include "model/weight_release.h"

namespace parley::backend {
namespace {

// The CUDA backend holds every weight on the device once made (the norms and the embedding
// too), so the host's bytes all go.
std::unique_ptr<Backend> cuda_backend(const model::LoadedModel& model, int32_t device,
                                      const WeightRelease& release, const WeightsTaken& taken) {
  auto backend = make_cuda_backend(model, device, taken);
  // The views themselves may be emptied on the way: copies are given.
  std::vector<model::TensorView> views;
  for (const model::TensorView* v : model::weight_views(model.weights)) views.push_back(*v);
  for (const model::TensorView& v : views) release(v);
  return backend;
}

}  // namespace

DeviceName parse_device(std::string_view device) {
  if (device.empty() || device == "auto") return {DeviceName::Kind::automatic, 0};
  if (device == "cpu") return {DeviceName::Kind::cpu, 0};
  if (device == "cuda") return {DeviceName::Kind::cuda, 0};
  constexpr std::string_view prefix = "cuda:";
  if (device.starts_with(prefix) && device.size() > prefix.size()) {
    const std::string_view digits = device.substr(prefix.size());
    int32_t index = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.front() != '-' && digits.front() != '+' && end == digits.data() + digits.size()) {
      if (error == std::errc()) return {DeviceName::Kind::cuda, index};
      if (error == std::errc::result_out_of_range) {
        fail(Status::invalid_argument,
             "device '" + std::string(device) + "': the CUDA device index is too large");
      }
    }
  }
  fail(Status::invalid_argument,
       "unknown device '" + std::string(device) + "' (expected auto, cpu, cuda or cuda:N)");
}

std::unique_ptr<Backend> make_backend(std::string_view device, const model::LoadedModel& model,
                                      int32_t n_threads, const WeightRelease& release,
                                      const WeightsTaken& taken) {
  const WeightRelease let_go =
      release ? release
              : WeightRelease([&model](const model::TensorView& v) {
                  model::drop_file_pages(model, v);
                });
  const DeviceName name = parse_device(device);
  if (name.kind == DeviceName::Kind::automatic) {
    // The GPU when the CUDA module and a device are there; otherwise the CPU, saying why.
    if (cuda_device_count() > 0) {
      try {
        return cuda_backend(model, 0, let_go, taken);
      } catch (const Error& e) {
        if (e.status() == Status::cancelled) throw;  // the caller stopped the opening
        log::warn_line(std::string("device auto: CUDA device 0 failed (") + e.what() +
                       "); running on the CPU");
      }
    } else {
      const std::string why = cuda_module_problem();
      log::info_line("device auto: " + (why.empty() ? "no CUDA device is visible" : why) +
                     "; running on the CPU");
    }
  }
  if (name.kind != DeviceName::Kind::cuda) {
    // Only a caller's `release` frees the model's buffers: let_go's own drops file pages.
    return std::make_unique<cpu::CpuBackend>(model.config, model.weights, n_threads, let_go,
                                             taken, /*release_frees_buffers=*/bool(release));
  }
  const std::string problem = cuda_module_problem();
  require(problem.empty(), Status::backend,
          "device '" + std::string(device) + "': the CUDA backend is not available: " + problem);
  const int32_t count = cuda_device_count();
  require(count > 0, Status::backend,
          "device '" + std::string(device) +
              "': no CUDA device is visible (no NVIDIA driver or GPU on this machine)");
  require(name.index < count, Status::backend,
          "device '" + std::string(device) + "': only " + std::to_string(count) +
              " CUDA device(s) are visible");
  return cuda_backend(model, name.index, let_go, taken);
}

}  // namespace parley::backend

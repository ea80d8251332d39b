// libparley's side of the CUDA module: finds and loads libparley_cuda.so at run time (never
// linked), and wraps its C function table in a Backend. Without the module or a device every
// call here answers "none", so one libparley runs on machines without CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace parley::backend {

// Devices the module sees; 0 without the module, a driver or a GPU. Loads the module once.
int32_t cuda_device_count();

// Why the module is not loaded ("" when it is).
std::string cuda_module_problem();

// Throws Error(backend) with the module's message when the model cannot go to the device.
// `taken` is told the bytes on the device so far as each part of the model gets there; what
// it throws stops the upload and is thrown from here.
std::unique_ptr<Backend> make_cuda_backend(const model::LoadedModel& model, int32_t device,
                                           const WeightsTaken& taken = {});

struct CudaCeilings {
  std::string device_name;
  double copy_gb_s = 0;    // device copy: bytes read + written per second / 1e9
  double bf16_tflops = 0;  // cuBLAS bf16 GEMM of gemm_size^3
  int32_t gemm_size = 0;
};
// Throws Error(backend) without a module or device.
CudaCeilings measure_cuda_ceilings(int32_t device, uint64_t copy_bytes, int32_t gemm_size);

}  // namespace parley::backend

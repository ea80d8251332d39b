// The module's one exported symbol: the C function table libparley resolves with dlsym.
// Every entry catches everything, so no exception leaves the module.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <new>

#include "backend/cuda/ceilings.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/module_api.h"
#include "common/error.h"

struct parley_cuda_backend {
  parley::backend::cuda::CudaBackend impl;
  parley_cuda_backend(const parley_cuda_model& m, int32_t device) : impl(m, device) {}
};

namespace {

using parley::Status;

void set_error(char* err, size_t cap, const char* msg) {
  if (err && cap > 0) std::snprintf(err, cap, "%s", msg);
}

template <class F>
int32_t guarded(char* err, size_t cap, F body) {
  try {
    body();
    return 0;
  } catch (const parley::Error& e) {
    set_error(err, cap, e.what());
    return int32_t(e.status());
  } catch (const std::bad_alloc&) {
    set_error(err, cap, "out of host memory in the CUDA backend");
    return int32_t(Status::out_of_memory);
  } catch (const std::exception& e) {
    set_error(err, cap, e.what());
    return int32_t(Status::internal);
  } catch (...) {
    set_error(err, cap, "unknown failure in the CUDA backend");
    return int32_t(Status::internal);
  }
}

int32_t device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not sticky, nothing to report
    return 0;
  }
  return n;
}

int32_t create(const parley_cuda_model* model, int32_t device, parley_cuda_backend** out,
               char* err, size_t cap) {
  if (out) *out = nullptr;
  return guarded(err, cap, [&] {
    parley::require(model && out, Status::internal, "create: null argument");
    *out = new parley_cuda_backend(*model, device);
  });
}

void destroy(parley_cuda_backend* b) { delete b; }

uint32_t max_batch(const parley_cuda_backend* b) { return b->impl.max_batch(); }

int32_t forward(parley_cuda_backend* b, const parley_cuda_batch* batch, const parley_cuda_kv* kv,
                float* logits, uint64_t n_logits, char* err, size_t cap) {
  return guarded(err, cap, [&] { b->impl.forward(*batch, *kv, logits, n_logits); });
}

int32_t download(parley_cuda_backend* b, uint8_t* host_block, uint64_t stamp, int32_t kv_type,
                 uint64_t block_bytes, char* err, size_t cap) {
  return guarded(err, cap, [&] { b->impl.download(host_block, stamp, kv_type, block_bytes); });
}

int32_t measure(int32_t device, uint64_t copy_bytes, int32_t gemm_size,
                parley_cuda_measurements* out, char* err, size_t cap) {
  return guarded(err, cap, [&] {
    *out = parley::backend::cuda::measure_ceilings(device, copy_bytes, gemm_size);
  });
}

const parley_cuda_api kApi = {PARLEY_CUDA_MODULE_ABI, 0, device_count, create, destroy,
                              max_batch, forward, download, measure};

}  // namespace

extern "C" __attribute__((visibility("default"))) const parley_cuda_api* parley_cuda_module_api(void) {
  return &kApi;
}

// Programmatic dependent launch (Hopper and later): a kernel launched by launch_dependent may
// start while the kernel before it on the stream is finishing, so its launch and any work
// that needs nothing from earlier kernels (streaming weights into L2) overlap that kernel's
// tail. Every such kernel calls wait_for_producers() in every thread before it reads or
// writes memory that earlier kernels touch, and before it returns; allow_dependents() lets
// the next kernel start before this one's blocks have all finished. Off unless
// PARLEY_CUDA_PDL=1, until measured on a device.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace parley::kernels {

bool dependent_launch_enabled();  // PARLEY_CUDA_PDL=1, read once

__device__ __forceinline__ void wait_for_producers() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <class... Params, class... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                             cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  if (dependent_launch_enabled()) {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace parley::kernels

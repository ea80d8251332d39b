#include "backend/cuda/device_memory.h"

#include "backend/cuda/cuda_check.h"

namespace parley::backend::cuda {

cudaError_t DeviceMemory::allocate(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
void DeviceMemory::release(void* p) { cudaFree(p); }

cudaError_t PinnedMemory::allocate(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
void PinnedMemory::release(void* p) { cudaFreeHost(p); }

template <class Memory>
bool CudaBuffer<Memory>::reserve(size_t bytes) {
  if (bytes <= n_ && p_) return false;
  reset();
  void* p = nullptr;  // not p_: a failed call may leave anything in its argument
  PARLEY_CUDA(Memory::allocate(&p, bytes ? bytes : 1));
  p_ = p;
  n_ = bytes;
  return true;
}

template class CudaBuffer<DeviceMemory>;
template class CudaBuffer<PinnedMemory>;

Stream::Stream() { PARLEY_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

Event::Event() { PARLEY_CUDA(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}

}  // namespace parley::backend::cuda

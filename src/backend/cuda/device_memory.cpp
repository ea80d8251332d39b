#include "backend/cuda/device_memory.h"

#include "backend/cuda/cuda_check.h"

namespace parley::backend::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) { reserve(bytes); }

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
  }
  return *this;
}

bool DeviceBuffer::reserve(size_t bytes) {
  if (bytes <= n_ && p_) return false;
  if (p_) cudaFree(p_);
  p_ = nullptr;
  n_ = 0;
  PARLEY_CUDA(cudaMalloc(&p_, bytes ? bytes : 1));
  n_ = bytes;
  return true;
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

bool PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= n_ && p_) return false;
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  n_ = 0;
  PARLEY_CUDA(cudaMallocHost(&p_, bytes ? bytes : 1));
  n_ = bytes;
  return true;
}

Stream::Stream() { PARLEY_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

Event::Event() { PARLEY_CUDA(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}

}  // namespace parley::backend::cuda

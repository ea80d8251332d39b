// Owning handles for device memory, pinned host memory, streams and events.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace parley::backend::cuda {

// How a CudaBuffer takes and returns its memory.
struct DeviceMemory {  // cudaMalloc / cudaFree
  static cudaError_t allocate(void** p, size_t bytes);
  static void release(void* p);
};
struct PinnedMemory {  // cudaMallocHost / cudaFreeHost
  static cudaError_t allocate(void** p, size_t bytes);
  static void release(void* p);
};

// One allocation of Memory, released with it; movable, not copyable.
template <class Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(size_t bytes) { reserve(bytes); }
  ~CudaBuffer() { reset(); }
  CudaBuffer(CudaBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return n_; }
  // Grows to at least `bytes` (contents are not kept); true when it reallocated. Throws
  // Error(backend) when the allocation fails, leaving the buffer empty.
  bool reserve(size_t bytes);

 private:
  void reset() noexcept {
    if (p_) Memory::release(p_);
    p_ = nullptr;
    n_ = 0;
  }

  void* p_ = nullptr;
  size_t n_ = 0;
};

using DeviceBuffer = CudaBuffer<DeviceMemory>;
using PinnedBuffer = CudaBuffer<PinnedMemory>;

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace parley::backend::cuda

// Owning handles for device memory, pinned host memory, streams and events.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace parley::backend::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return n_; }
  // Grows to at least `bytes` (contents are not kept); true when it reallocated.
  bool reserve(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return n_; }
  bool reserve(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

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

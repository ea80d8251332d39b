// Helpers of the GPU tests: the skip rule, device buffers fenced by guard bytes, the
// normalized error the comparisons use, their random inputs, and settings from the
// environment.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace parley::test {

// True when a CUDA device is visible; otherwise prints a visible skip message (once).
bool gpu_available();

#define PARLEY_GPU_OR_SKIP()                      \
  do {                                            \
    if (!::parley::test::gpu_available()) return; \
  } while (0)

// Device memory with kGuard bytes of a known pattern on each side: guards_intact() says
// whether a kernel wrote outside the span it was given.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;
  static constexpr unsigned char kPattern = 0xA5;
  explicit GuardedBuffer(size_t bytes);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* get() const { return base_ + kGuard; }
  template <class T>
  T* as() const { return reinterpret_cast<T*>(base_ + kGuard); }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t n) const;
  void download(void* dst, size_t n) const;
  template <class T>
  std::vector<T> read(size_t count) const {
    std::vector<T> out(count);
    download(out.data(), count * sizeof(T));
    return out;
  }
  bool guards_intact() const;

 private:
  unsigned char* base_ = nullptr;
  size_t bytes_;
};

// Normalized mean squared error: mse(a, b) / mse(b, 0) (0 when both are zero).
double nmse(const float* a, const float* b, size_t n);
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  return nmse(a.data(), b.data(), a.size() < b.size() ? a.size() : b.size());
}

// An environment variable set for the CUDA backends made while it lives; the value it had
// before (gpu-check runs the tests under some settings) comes back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void check_cuda_ok(cudaError_t e);  // fails the current test with the error's name

// n normally distributed values (mean 0, standard deviation sd) from a generator seeded seed.
std::vector<float> random_floats(size_t n, uint32_t seed, float sd = 1.0f);

}  // namespace parley::test

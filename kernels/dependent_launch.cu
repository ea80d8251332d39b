#include <cstdlib>
#include <cstring>

#include "kernels/dependent_launch.cuh"

namespace parley::kernels {

bool dependent_launch_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("PARLEY_CUDA_PDL");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return enabled;
}

}  // namespace parley::kernels

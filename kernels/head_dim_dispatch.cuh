// The head sizes the attention kernels are compiled for, as one dispatch: the host checks at
// load that a model's head size is among them.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

namespace parley::kernels {

// launch(std::integral_constant<int, HD>{}) for head_dim HD in {8, 16, 32, 64, 128, 256};
// cudaErrorInvalidValue for any other.
template <class Launch>
cudaError_t with_head_dim(int head_dim, Launch launch) {
  switch (head_dim) {
    case 8: return launch(std::integral_constant<int, 8>{});
    case 16: return launch(std::integral_constant<int, 16>{});
    case 32: return launch(std::integral_constant<int, 32>{});
    case 64: return launch(std::integral_constant<int, 64>{});
    case 128: return launch(std::integral_constant<int, 128>{});
    case 256: return launch(std::integral_constant<int, 256>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace parley::kernels

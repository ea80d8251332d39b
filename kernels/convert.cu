// Weights from the file's type to the resident type, on the device after a raw upload.
#include "kernels/common/elem.cuh"
#include "kernels/common/weight_blocks.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

__global__ void convert_kernel(ConvertArgs a) {
  const int64_t total = a.rows * a.cols;
  const auto* src = static_cast<const uint8_t*>(a.src);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.cols, c = i % a.cols;
    float v;
    if (a.src_type == kQ8_0) {
      v = q8_0_value(src + r * (a.cols / 32 * kQ8_0BlockBytes), c);
    } else if (a.src_type == kQ4_0) {
      v = q4_0_value(src + r * (a.cols / 32 * kQ4_0BlockBytes), c);
    } else if (a.src_type == kQ4_1) {
      v = q4_1_value(src + r * (a.cols / 32 * kQ4_1BlockBytes), c);
    } else if (a.src_type == kQ5_1) {
      v = q5_1_value(src + r * (a.cols / 32 * kQ5_1BlockBytes), c);
    } else {
      v = load_elem(a.src, a.src_type, size_t(i));
    }
    store_elem(a.dst, a.dst_type, size_t(i), v);
  }
}

}  // namespace

cudaError_t launch_convert(const ConvertArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.cols <= 0) return cudaErrorInvalidValue;
  const bool blocked = args.src_type >= kQ8_0 && args.src_type <= kQ4_0;
  if (blocked && args.cols % 32 != 0) return cudaErrorInvalidValue;
  const int64_t total = args.rows * args.cols;
  const int64_t blocks = (total + 255) / 256;
  convert_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

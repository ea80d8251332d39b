// Weights from the file's type to the resident type, on the device after a raw upload.
#include "kernels/common/elem.cuh"
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

// Q8_0 (ggml): blocks of 32 values, an F16 scale then 32 int8; value = scale * q.
__device__ float load_q8_0(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / 32) * 34;
  const float d = __half2float(*reinterpret_cast<const __half*>(block));  // 2-byte aligned
  return d * static_cast<float>(static_cast<int8_t>(block[2 + c % 32]));
}

__global__ void convert_kernel(ConvertArgs a) {
  const int64_t total = a.rows * a.cols;
  const int64_t q8_row_bytes = a.cols / 32 * 34;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v;
    if (a.src_type == kQ8_0) {
      const int64_t r = i / a.cols;
      v = load_q8_0(static_cast<const uint8_t*>(a.src) + r * q8_row_bytes, i % a.cols);
    } else {
      v = load_elem(a.src, a.src_type, size_t(i));
    }
    store_elem(a.dst, a.dst_type, size_t(i), v);
  }
}

}  // namespace

cudaError_t launch_convert(const ConvertArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.cols <= 0) return cudaErrorInvalidValue;
  if (args.src_type == kQ8_0 && args.cols % 32 != 0) return cudaErrorInvalidValue;
  const int64_t total = args.rows * args.cols;
  const int64_t blocks = (total + 255) / 256;
  convert_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

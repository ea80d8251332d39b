// Copy-on-write of KV blocks: one thread block per copied block, 16 bytes per access when
// the size allows.
#include "kernels/launch.h"

namespace parley::kernels {
namespace {

__global__ void kv_block_copy_kernel(KvBlockCopyArgs a) {
  const uint8_t* src = a.src[blockIdx.x];
  uint8_t* dst = a.dst[blockIdx.x];
  if (a.block_bytes % 16 == 0) {  // device blocks are 256-byte aligned
    const int64_t n = a.block_bytes / 16;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
  } else {
    for (int64_t i = threadIdx.x; i < a.block_bytes; i += blockDim.x) dst[i] = src[i];
  }
}

}  // namespace

cudaError_t launch_kv_block_copy(const KvBlockCopyArgs& args, cudaStream_t stream) {
  if (args.n_blocks < 0 || args.block_bytes <= 0) return cudaErrorInvalidValue;
  if (args.n_blocks == 0) return cudaSuccess;
  kv_block_copy_kernel<<<args.n_blocks, 256, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace parley::kernels

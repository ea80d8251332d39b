#include "backend/cuda/kv_mirror.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "kernels/common/paged_kv.cuh"

namespace parley::backend::cuda {
namespace {

constexpr size_t kSlabBytes = size_t(64) << 20;
constexpr size_t kSlotAlign = 256;

}  // namespace

bool KvMirror::evict_unused() {
  bool any = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.last_use != clock_ && !it->second.host_behind) {
      free_.push_back(it->second.device);
      it = entries_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  return any;
}

uint8_t* KvMirror::take_slot() {
  if (free_.empty()) {
    const size_t slot = (block_bytes_ + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    const size_t n = std::max<size_t>(1, kSlabBytes / slot);
    DeviceBuffer slab;
    try {
      slab.reserve(n * slot);
    } catch (const Error& e) {
      // Device memory is short: blocks of other sequences go (the host still has them).
      if (e.status() != Status::out_of_memory || !evict_unused()) throw;
    }
    if (slab.get()) {
      for (size_t i = 0; i < n; ++i) free_.push_back(slab.as<uint8_t>() + i * slot);
      slabs_.push_back(std::move(slab));
    }
  }
  uint8_t* p = free_.back();
  free_.pop_back();
  return p;
}

void KvMirror::prepare(const parley_cuda_kv& kv, uint32_t start_pos, uint8_t** table,
                       cudaStream_t stream) {
  ++clock_;
  for (uint32_t i = 0; i < kv.n_blocks; ++i) {
    Entry& e = entries_[kv.host_blocks[i]];
    e.last_use = clock_;  // before take_slot, which may evict entries not used in this call
    if (!e.device) e.device = take_slot();
    if (e.stamp != kv.stamps[i]) {
      if (uint64_t(i) * kernels::kKvBlockTokens < start_pos) {
        PARLEY_CUDA(cudaMemcpyAsync(e.device, kv.host_blocks[i], block_bytes_,
                                    cudaMemcpyHostToDevice, stream));
      }
      e.stamp = kv.stamps[i];
      e.host_behind = false;
    }
    if (!kv.write_host && (uint64_t(i) + 1) * kernels::kKvBlockTokens > start_pos) e.host_behind = true;
    table[i] = e.device;
  }
}

void KvMirror::download(uint8_t* host, uint64_t stamp, cudaStream_t stream) {
  const auto it = entries_.find(host);
  require(it != entries_.end() && it->second.device && it->second.stamp == stamp, Status::internal,
          "a KV block the host asked back is not on the device");
  PARLEY_CUDA(cudaMemcpyAsync(host, it->second.device, block_bytes_, cudaMemcpyDeviceToHost, stream));
  PARLEY_CUDA(cudaStreamSynchronize(stream));
  it->second.host_behind = false;
}

}  // namespace parley::backend::cuda

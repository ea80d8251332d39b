// The KV block pool in device memory: a mirror of the host's blocks (same byte layout), kept
// by host block address. A forward writes its new rows to both, or (write-back) to the device
// only, and download() brings a block's bytes to the host when the host needs them. A block
// whose BlockPool stamp changed (restored from the store, copied on write, reallocated) is
// uploaded before it is read.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "backend/cuda/device_memory.h"
#include "backend/cuda/module_api.h"

namespace parley::backend::cuda {

class KvMirror {
 public:
  explicit KvMirror(size_t block_bytes) : block_bytes_(block_bytes) {}

  // Device pointers of kv's blocks into table[0, kv.n_blocks). Blocks holding positions
  // before start_pos are uploaded when stale; later ones are about to be written, and when
  // kv.write_host is 0 their host bytes fall behind until download(). Throws
  // Error(out_of_memory) when the device cannot hold this sequence's blocks.
  void prepare(const parley_cuda_kv& kv, uint32_t start_pos, uint8_t** table, cudaStream_t stream);
  // The device's bytes of the block at `host` (allocation `stamp`) into `host`. Throws
  // Error(internal) when this mirror holds no such copy.
  void download(uint8_t* host, uint64_t stamp, cudaStream_t stream);

  size_t block_bytes() const { return block_bytes_; }
  size_t resident_blocks() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t stamp = 0;  // 0: holds nothing yet
    uint8_t* device = nullptr;
    uint64_t last_use = 0;
    bool host_behind = false;  // written on the device only: never evicted before download
  };
  uint8_t* take_slot();
  bool evict_unused();

  size_t block_bytes_;
  uint64_t clock_ = 0;
  std::unordered_map<const uint8_t*, Entry> entries_;  // by host block address
  std::vector<uint8_t*> free_;
  std::vector<DeviceBuffer> slabs_;
};

}  // namespace parley::backend::cuda

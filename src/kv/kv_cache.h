// A standalone KV cache for one sequence of a fixed capacity: its own small pool and block
// table. For tests, tools and references that run a model without an engine.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_view.h"

namespace parley::kv {

class KvCache {
 public:
  KvCache(KvType type, const KvShape& shape, uint32_t capacity);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  KvView& view() { return view_; }
  operator KvView&() { return view_; }  // pass a KvCache where a backend wants a view

  KvType type() const { return view_.type(); }
  const KvShape& shape() const { return view_.shape(); }
  uint32_t capacity() const { return capacity_; }
  size_t bytes() const { return blocks_.size() * pool_.layout().block_bytes(); }

  void write(int32_t layer, uint32_t pos, const float* k, const float* v) {
    view_.write(layer, pos, k, v);
  }
  void read_k(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
    view_.read_k(layer, pos, kv_head, out);
  }
  void read_v(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
    view_.read_v(layer, pos, kv_head, out);
  }

 private:
  uint32_t capacity_;
  BlockPool pool_;
  std::vector<BlockId> blocks_;
  KvView view_;
};

}  // namespace parley::kv

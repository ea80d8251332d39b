#include "kv/kv_cache.h"

namespace parley::kv {
namespace {

uint32_t blocks_for(uint32_t tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }

}  // namespace

KvCache::KvCache(KvType type, const KvShape& shape, uint32_t capacity)
    : capacity_(capacity),
      pool_(BlockLayout(type, shape),
            uint64_t(blocks_for(capacity)) * BlockLayout(type, shape).block_bytes()),
      blocks_(),
      view_(pool_, blocks_, 0) {
  for (uint32_t i = 0; i < blocks_for(capacity); ++i) blocks_.push_back(pool_.allocate());
  view_ = KvView(pool_, blocks_, capacity);
}

KvCache::~KvCache() = default;

}  // namespace parley::kv

#include "kv/block_pool.h"

#include <atomic>
#include <new>
#include <string>

#include "common/error.h"

namespace parley::kv {
namespace {

// Block memory is aligned for any SIMD load of its rows.
constexpr std::align_val_t kBlockAlignment{64};

std::atomic<uint64_t> next_stamp{1};

}  // namespace

void BlockPool::AlignedDelete::operator()(std::byte* p) const {
  ::operator delete[](p, kBlockAlignment);
}

BlockPool::BlockPool(const BlockLayout& layout, uint64_t budget_bytes)
    : layout_(layout), budget_bytes_(budget_bytes), capacity_(budget_bytes / layout.block_bytes()) {
  // data() reads this vector without the lock, so it must never reallocate.
  blocks_.reserve(size_t(capacity_));
  state_.reserve(size_t(capacity_));
  free_.reserve(size_t(capacity_));
}

void BlockPool::check_id_locked(BlockId id) const {
  // A message built only on failure: these checks run in release(), which must not allocate.
  require(id >= 0 && size_t(id) < state_.size(), Status::internal,
          [&] { return "KV block " + std::to_string(id) + " does not exist"; });
}

BlockId BlockPool::take_block_locked() {
  if (!free_.empty()) {
    const BlockId id = free_.back();
    free_.pop_back();
    return id;
  }
  if (blocks_.size() < capacity_) {
    const auto id = BlockId(blocks_.size());
    const auto node = spare_.insert(spare_.end(), id);
    std::byte* p = nullptr;
    try {
      p = static_cast<std::byte*>(::operator new[](layout_.block_bytes(), kBlockAlignment));
    } catch (...) {
      spare_.erase(node);
      throw;
    }
    blocks_.emplace_back(p);  // reserved: neither can throw
    state_.emplace_back().lru_pos = node;
    return id;
  }
  if (!lru_.empty()) {  // the least recently used cached prefix block gives way
    const BlockId id = lru_.front();
    spare_.splice(spare_.end(), lru_, lru_.begin());
    state_[size_t(id)].in_lru = false;
    index_.erase(id);
    return id;
  }
  fail(Status::out_of_memory,
       budget_words() +
           " is exhausted: every block holds KV of an open session (the one asking "
           "included, which alone may need more than the budget); close sessions, suspend "
           "them (an engine with a store), or raise kv_budget_bytes");
}

std::string BlockPool::budget_words() const {
  return "the KV budget of " + std::to_string(budget_bytes_) + " bytes (" +
         std::to_string(capacity_) + " blocks of " + std::to_string(layout_.block_bytes()) +
         " bytes)";
}

BlockId BlockPool::allocate() {
  std::lock_guard lock(mutex_);
  const BlockId id = take_block_locked();
  state_[size_t(id)].refs = 1;
  state_[size_t(id)].stamp = next_stamp.fetch_add(1, std::memory_order_relaxed);
  state_[size_t(id)].device_newer = false;  // a new allocation: nothing newer anywhere
  return id;
}

bool BlockPool::can_allocate(size_t n) const {
  std::lock_guard lock(mutex_);
  return free_.size() + (capacity_ - blocks_.size()) + lru_.size() >= n;
}

void BlockPool::retain(BlockId id) {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  BlockState& s = state_[size_t(id)];
  if (s.in_lru) {
    spare_.splice(spare_.end(), lru_, s.lru_pos);
    s.in_lru = false;
  }
  ++s.refs;
}

void BlockPool::release(BlockId id) {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  BlockState& s = state_[size_t(id)];
  if (s.refs == 0) fail(Status::internal, "KV block " + std::to_string(id) + " released too often");
  if (--s.refs > 0) return;
  if (index_.contains(id)) {
    lru_.splice(lru_.end(), spare_, s.lru_pos);
    s.in_lru = true;
  } else {
    free_.push_back(id);  // reserved for every block: no allocation
  }
}

uint32_t BlockPool::ref_count(BlockId id) const {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  return state_[size_t(id)].refs;
}

const std::byte* BlockPool::read(BlockId id) {
  std::shared_ptr<HostSync> sync;
  uint64_t stamp = 0;
  {
    std::lock_guard lock(mutex_);
    check_id_locked(id);
    const BlockState& s = state_[size_t(id)];
    if (!s.device_newer) return data(id);
    sync = host_sync_.lock();
    require(sync != nullptr, Status::internal,
            "KV block " + std::to_string(id) + " is newer on a device whose backend is gone");
    stamp = s.stamp;
  }
  // Not under the lock: the backend takes its own lock, under which its forward() marks
  // blocks here.
  sync->bring_to_host(id, stamp, layout_, data(id));
  std::lock_guard lock(mutex_);
  if (state_[size_t(id)].stamp == stamp) state_[size_t(id)].device_newer = false;
  return data(id);
}

void BlockPool::set_host_sync(std::weak_ptr<HostSync> sync) {
  std::lock_guard lock(mutex_);
  host_sync_ = std::move(sync);
}

void BlockPool::mark_device_newer(BlockId id) {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  state_[size_t(id)].device_newer = true;
}

bool BlockPool::device_newer(BlockId id) const {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  return state_[size_t(id)].device_newer;
}

uint64_t BlockPool::stamp(BlockId id) const {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  return state_[size_t(id)].stamp;
}

void BlockPool::publish(BlockId id, const BlockKey& key) {
  std::lock_guard lock(mutex_);
  check_id_locked(id);
  index_.insert(key, id);
}

bool BlockPool::is_published(BlockId id) const {
  std::lock_guard lock(mutex_);
  return index_.contains(id);
}

std::optional<BlockId> BlockPool::acquire_published(const BlockKey& key) {
  std::lock_guard lock(mutex_);
  const auto id = index_.find(key);
  if (!id) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  BlockState& s = state_[size_t(*id)];
  if (s.in_lru) {
    spare_.splice(spare_.end(), lru_, s.lru_pos);
    s.in_lru = false;
  }
  ++s.refs;
  return id;
}

PoolStats BlockPool::stats() const {
  std::lock_guard lock(mutex_);
  PoolStats st;
  st.total = capacity_;
  st.allocated = blocks_.size();
  for (const BlockState& s : state_) {
    st.used += s.refs > 0;
    st.shared += s.refs > 1;
  }
  st.cached = lru_.size();
  st.prefix_hits = hits_;
  st.prefix_misses = misses_;
  return st;
}

}  // namespace parley::kv

// The byte layout of a KV block: kBlockTokens tokens of every layer. Within a block, layer l
// holds K then V, each [kBlockTokens][n_kv_heads][head_dim] elements; INT8 blocks end with the
// scales, per layer K then V, each [kBlockTokens][n_kv_heads] floats. Backends and the store
// read blocks through this one description.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parley::kv {

inline constexpr uint32_t kBlockTokens = 16;

enum class KvType : int32_t { int8 = 1, f16 = 2, f32 = 3 };  // PARLEY_KV_* values

const char* kv_type_name(KvType t);
size_t kv_element_bytes(KvType t);

struct KvShape {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t row() const { return n_kv_heads * head_dim; }  // K (or V) values per token per layer
  bool operator==(const KvShape&) const = default;
};

// Bytes one token takes: 2 x layers x kv_heads x head_dim x element bytes, plus
// 2 x layers x kv_heads float scales for INT8.
size_t kv_bytes_per_token(KvType type, const KvShape& shape);

class BlockLayout {
 public:
  BlockLayout(KvType type, const KvShape& shape);

  KvType type() const { return type_; }
  const KvShape& shape() const { return shape_; }
  size_t block_bytes() const { return block_bytes_; }
  size_t element_bytes() const { return element_bytes_; }

  // Byte offsets inside a block of the head_dim values of (layer, slot, head), slot < 16.
  size_t k_offset(int32_t layer, uint32_t slot, int32_t head) const {
    return size_t(layer) * 2 * plane_bytes_ + value_index(slot, head) * element_bytes_;
  }
  size_t v_offset(int32_t layer, uint32_t slot, int32_t head) const {
    return k_offset(layer, slot, head) + plane_bytes_;
  }
  // Byte offsets of the float scales of (layer, slot, head); INT8 only.
  size_t k_scale_offset(int32_t layer, uint32_t slot, int32_t head) const {
    return scales_base_ + (size_t(layer) * 2 * kBlockTokens * shape_.n_kv_heads +
                           size_t(slot) * shape_.n_kv_heads + size_t(head)) * sizeof(float);
  }
  size_t v_scale_offset(int32_t layer, uint32_t slot, int32_t head) const {
    return k_scale_offset(layer, slot, head) + kBlockTokens * shape_.n_kv_heads * sizeof(float);
  }

 private:
  size_t value_index(uint32_t slot, int32_t head) const {
    return (size_t(slot) * shape_.n_kv_heads + size_t(head)) * size_t(shape_.head_dim);
  }

  KvType type_;
  KvShape shape_;
  size_t element_bytes_;
  size_t plane_bytes_;  // K (or V) of one layer: kBlockTokens x n_kv_heads x head_dim elements
  size_t scales_base_;
  size_t block_bytes_;
};

}  // namespace parley::kv

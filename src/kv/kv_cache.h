// One sequence's KV cache: K and V of every layer for positions [0, capacity), stored as
// INT8 (+ one float scale per token and KV head), F16 or F32. K/V are written (quantized)
// first and attention then reads them back from here, so results never depend on how the
// tokens of a sequence were split into calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parley::kv {

enum class KvType : int32_t { int8 = 1, f16 = 2, f32 = 3 };  // PARLEY_KV_* values

const char* kv_type_name(KvType t);

struct KvShape {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t row() const { return n_kv_heads * head_dim; }  // K (or V) values per token per layer
};

// Bytes one token takes in the cache: 2 x layers x kv_heads x head_dim x element bytes,
// plus 2 x layers x kv_heads float scales for INT8.
size_t kv_bytes_per_token(KvType type, const KvShape& shape);

class KvCache {
 public:
  KvCache(KvType type, const KvShape& shape, uint32_t capacity);

  KvType type() const { return type_; }
  const KvShape& shape() const { return shape_; }
  uint32_t capacity() const { return capacity_; }
  size_t bytes() const { return size_t(capacity_) * kv_bytes_per_token(type_, shape_); }

  // Stores one token's K and V rows ([n_kv_heads * head_dim] floats each) of one layer.
  void write(int32_t layer, uint32_t pos, const float* k, const float* v);

  // Reads one head of one stored token back as floats (dequantized): out[head_dim].
  void read_k(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const;
  void read_v(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const;

  // Raw access for attention kernels that dequantize on the fly. Element (layer, pos, head, i)
  // sits at index ((layer * capacity + pos) * n_kv_heads + head) * head_dim + i; the scale of
  // (layer, pos, head) at (layer * capacity + pos) * n_kv_heads + head.
  const void* k_data() const { return k_.data(); }
  const void* v_data() const { return v_.data(); }
  const float* k_scales() const { return k_scale_.data(); }
  const float* v_scales() const { return v_scale_.data(); }

 private:
  size_t row_index(int32_t layer, uint32_t pos) const {
    return (size_t(layer) * capacity_ + pos) * size_t(shape_.n_kv_heads);
  }
  void store(std::vector<std::byte>& data, std::vector<float>& scales, size_t row,
             const float* x);
  void load(const std::vector<std::byte>& data, const std::vector<float>& scales, size_t row,
            float* out) const;

  KvType type_;
  KvShape shape_;
  uint32_t capacity_;
  std::vector<std::byte> k_, v_;
  std::vector<float> k_scale_, v_scale_;  // INT8 only
};

}  // namespace parley::kv

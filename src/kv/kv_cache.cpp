#include "kv/kv_cache.h"

#include <cstring>

#include "common/error.h"
#include "kernels/common/int8.cuh"
#include "model/dtype.h"

namespace parley::kv {
namespace {

size_t element_bytes(KvType t) {
  switch (t) {
    case KvType::int8: return 1;
    case KvType::f16: return 2;
    case KvType::f32: return 4;
  }
  return 0;
}

}  // namespace

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::int8: return "int8";
    case KvType::f16: return "f16";
    case KvType::f32: return "f32";
  }
  return "?";
}

size_t kv_bytes_per_token(KvType type, const KvShape& shape) {
  const size_t values = 2 * size_t(shape.n_layers) * size_t(shape.row());
  const size_t scales = type == KvType::int8 ? 2 * size_t(shape.n_layers) * shape.n_kv_heads : 0;
  return values * element_bytes(type) + scales * sizeof(float);
}

KvCache::KvCache(KvType type, const KvShape& shape, uint32_t capacity)
    : type_(type), shape_(shape), capacity_(capacity) {
  require(shape.n_layers > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0,
          Status::internal, "KV cache shape must be positive");
  const size_t rows = size_t(shape.n_layers) * capacity * size_t(shape.n_kv_heads);
  const size_t n = rows * size_t(shape.head_dim) * element_bytes(type);
  k_.resize(n);
  v_.resize(n);
  if (type == KvType::int8) {
    k_scale_.resize(rows);
    v_scale_.resize(rows);
  }
}

void KvCache::store(std::vector<std::byte>& data, std::vector<float>& scales, size_t row,
                    const float* x) {
  const int32_t hd = shape_.head_dim;
  for (int32_t h = 0; h < shape_.n_kv_heads; ++h) {
    const size_t r = row + size_t(h);
    const float* src = x + size_t(h) * hd;
    std::byte* dst = data.data() + r * size_t(hd) * element_bytes(type_);
    switch (type_) {
      case KvType::int8:
        scales[r] = kernels::quantize_int8(src, hd, reinterpret_cast<int8_t*>(dst));
        break;
      case KvType::f16: {
        auto* out = reinterpret_cast<uint16_t*>(dst);
        for (int32_t i = 0; i < hd; ++i) out[i] = model::f32_to_f16(src[i]);
        break;
      }
      case KvType::f32:
        std::memcpy(dst, src, size_t(hd) * sizeof(float));
        break;
    }
  }
}

void KvCache::load(const std::vector<std::byte>& data, const std::vector<float>& scales,
                   size_t row, float* out) const {
  const int32_t hd = shape_.head_dim;
  const std::byte* src = data.data() + row * size_t(hd) * element_bytes(type_);
  switch (type_) {
    case KvType::int8: {
      const auto* q = reinterpret_cast<const int8_t*>(src);
      for (int32_t i = 0; i < hd; ++i) out[i] = kernels::dequantize_int8(q[i], scales[row]);
      break;
    }
    case KvType::f16: {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      for (int32_t i = 0; i < hd; ++i) out[i] = model::f16_to_f32(h[i]);
      break;
    }
    case KvType::f32:
      std::memcpy(out, src, size_t(hd) * sizeof(float));
      break;
  }
}

void KvCache::write(int32_t layer, uint32_t pos, const float* k, const float* v) {
  const size_t row = row_index(layer, pos);
  store(k_, k_scale_, row, k);
  store(v_, v_scale_, row, v);
}

void KvCache::read_k(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
  load(k_, k_scale_, row_index(layer, pos) + size_t(kv_head), out);
}

void KvCache::read_v(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
  load(v_, v_scale_, row_index(layer, pos) + size_t(kv_head), out);
}

}  // namespace parley::kv

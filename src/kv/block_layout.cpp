#include "kv/block_layout.h"

#include "common/error.h"

namespace parley::kv {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::int8: return "int8";
    case KvType::f16: return "f16";
    case KvType::f32: return "f32";
  }
  return "?";
}

size_t kv_element_bytes(KvType t) {
  switch (t) {
    case KvType::int8: return 1;
    case KvType::f16: return 2;
    case KvType::f32: return 4;
  }
  return 0;
}

size_t kv_bytes_per_token(KvType type, const KvShape& shape) {
  const size_t values = 2 * size_t(shape.n_layers) * size_t(shape.row());
  const size_t scales = type == KvType::int8 ? 2 * size_t(shape.n_layers) * shape.n_kv_heads : 0;
  return values * kv_element_bytes(type) + scales * sizeof(float);
}

BlockLayout::BlockLayout(KvType type, const KvShape& shape)
    : type_(type), shape_(shape), element_bytes_(kv_element_bytes(type)) {
  require(shape.n_layers > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0, Status::internal,
          "KV shape must be positive");
  plane_bytes_ = size_t(kBlockTokens) * size_t(shape.row()) * element_bytes_;
  scales_base_ = size_t(shape.n_layers) * 2 * plane_bytes_;
  block_bytes_ = kBlockTokens * kv_bytes_per_token(type, shape);
}

}  // namespace parley::kv

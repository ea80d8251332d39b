#include "kv/kv_view.h"

#include <cstring>

#include "kernels/common/int8.cuh"
#include "kv/int8_rows.h"
#include "model/dtype.h"

namespace parley::kv {
namespace {

// One head's values into a block: quantized (INT8, scale beside), rounded (F16) or copied.
void store_head(KvType type, const float* x, int32_t n, std::byte* dst, std::byte* scale) {
  switch (type) {
    case KvType::int8: {
      const float s = quantize_int8_row(x, size_t(n), reinterpret_cast<int8_t*>(dst));
      std::memcpy(scale, &s, sizeof s);
      break;
    }
    case KvType::f16:
      for (int32_t i = 0; i < n; ++i) {
        const uint16_t h = model::f32_to_f16(x[i]);
        std::memcpy(dst + 2 * size_t(i), &h, 2);
      }
      break;
    case KvType::f32:
      std::memcpy(dst, x, size_t(n) * sizeof(float));
      break;
  }
}

void load_head(KvType type, const std::byte* src, const std::byte* scale, int32_t n, float* out) {
  switch (type) {
    case KvType::int8: {
      float s;
      std::memcpy(&s, scale, sizeof s);
      const auto* q = reinterpret_cast<const int8_t*>(src);
      for (int32_t i = 0; i < n; ++i) out[i] = kernels::dequantize_int8(q[i], s);
      break;
    }
    case KvType::f16:
      for (int32_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * size_t(i), 2);
        out[i] = model::f16_to_f32(h);
      }
      break;
    case KvType::f32:
      std::memcpy(out, src, size_t(n) * sizeof(float));
      break;
  }
}

}  // namespace

void KvView::write(int32_t layer, uint32_t pos, const float* k, const float* v) {
  const BlockLayout& l = layout();
  const int32_t hd = l.shape().head_dim;
  const bool int8 = l.type() == KvType::int8;
  const uint32_t slot = pos % kBlockTokens;
  std::byte* b = block(pos);
  for (int32_t h = 0; h < l.shape().n_kv_heads; ++h) {
    store_head(l.type(), k + size_t(h) * hd, hd, b + l.k_offset(layer, slot, h),
               int8 ? b + l.k_scale_offset(layer, slot, h) : nullptr);
    store_head(l.type(), v + size_t(h) * hd, hd, b + l.v_offset(layer, slot, h),
               int8 ? b + l.v_scale_offset(layer, slot, h) : nullptr);
  }
}

void KvView::read_k(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
  const BlockLayout& l = layout();
  const uint32_t slot = pos % kBlockTokens;
  const std::byte* b = block(pos);
  load_head(l.type(), b + l.k_offset(layer, slot, kv_head),
            l.type() == KvType::int8 ? b + l.k_scale_offset(layer, slot, kv_head) : nullptr,
            l.shape().head_dim, out);
}

void KvView::read_v(int32_t layer, uint32_t pos, int32_t kv_head, float* out) const {
  const BlockLayout& l = layout();
  const uint32_t slot = pos % kBlockTokens;
  const std::byte* b = block(pos);
  load_head(l.type(), b + l.v_offset(layer, slot, kv_head),
            l.type() == KvType::int8 ? b + l.v_scale_offset(layer, slot, kv_head) : nullptr,
            l.shape().head_dim, out);
}

}  // namespace parley::kv

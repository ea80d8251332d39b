// The paged KV block as kernels address it: the same byte layout as kv::BlockLayout (the unit
// tests compare the two), reached through a table of block pointers, one per 16 positions.
// Within a block, layer l holds K then V, each [16 slots][n_kv_heads][head_dim] elements; the
// INT8 scales follow all layers, per layer K then V, each [16 slots][n_kv_heads] floats.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/common/host_device.cuh"

namespace parley::kernels {

inline constexpr int kKvBlockTokens = 16;

// PARLEY_KV_* values.
enum KvElem : int32_t { kKvInt8 = 1, kKvF16 = 2, kKvF32 = 3 };

struct PagedKv {
  uint8_t* const* blocks = nullptr;  // [ceil(positions / 16)] device pointers to blocks
  int32_t kv_type = kKvInt8;
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;

  PARLEY_HD size_t elem_bytes() const { return kv_type == kKvInt8 ? 1 : kv_type == kKvF16 ? 2 : 4; }
  PARLEY_HD size_t row_elems() const { return size_t(n_kv_heads) * size_t(head_dim); }
  PARLEY_HD size_t plane_bytes() const { return kKvBlockTokens * row_elems() * elem_bytes(); }
  PARLEY_HD size_t scales_base() const { return size_t(n_layers) * 2 * plane_bytes(); }
  PARLEY_HD size_t block_bytes() const {
    const size_t scales = kv_type == kKvInt8 ? size_t(n_layers) * 2 * kKvBlockTokens * n_kv_heads * 4 : 0;
    return scales_base() + scales;
  }
  PARLEY_HD size_t k_offset(int layer, int slot, int head) const {
    return size_t(layer) * 2 * plane_bytes() +
           (size_t(slot) * n_kv_heads + size_t(head)) * size_t(head_dim) * elem_bytes();
  }
  PARLEY_HD size_t v_offset(int layer, int slot, int head) const {
    return k_offset(layer, slot, head) + plane_bytes();
  }
  PARLEY_HD size_t k_scale_offset(int layer, int slot, int head) const {
    return scales_base() +
           (size_t(layer) * 2 * kKvBlockTokens * n_kv_heads + size_t(slot) * n_kv_heads + head) * 4;
  }
  PARLEY_HD size_t v_scale_offset(int layer, int slot, int head) const {
    return k_scale_offset(layer, slot, head) + size_t(kKvBlockTokens) * n_kv_heads * 4;
  }
};

// The rows one call appends, packed per layer so the host can copy them back into its own
// blocks: layer l holds K rows [n][row], V rows [n][row], K scales [n][n_kv_heads] and V
// scales [n][n_kv_heads] (scales for INT8 only), each layer starting at l * layer_bytes().
struct KvStaging {
  uint8_t* base = nullptr;
  int32_t n_tokens = 0;

  PARLEY_HD static size_t row_bytes(const PagedKv& kv) { return kv.row_elems() * kv.elem_bytes(); }
  PARLEY_HD static size_t scale_bytes(const PagedKv& kv) {
    return kv.kv_type == kKvInt8 ? size_t(kv.n_kv_heads) * 4 : 0;
  }
  PARLEY_HD size_t layer_bytes(const PagedKv& kv) const {
    return size_t(n_tokens) * 2 * (row_bytes(kv) + scale_bytes(kv));
  }
  PARLEY_HD size_t k_row(const PagedKv& kv, int layer, int t) const {
    return layer * layer_bytes(kv) + size_t(t) * row_bytes(kv);
  }
  PARLEY_HD size_t v_row(const PagedKv& kv, int layer, int t) const {
    return k_row(kv, layer, t) + size_t(n_tokens) * row_bytes(kv);
  }
  PARLEY_HD size_t k_scales(const PagedKv& kv, int layer, int t) const {
    return layer * layer_bytes(kv) + size_t(n_tokens) * 2 * row_bytes(kv) + size_t(t) * scale_bytes(kv);
  }
  PARLEY_HD size_t v_scales(const PagedKv& kv, int layer, int t) const {
    return k_scales(kv, layer, t) + size_t(n_tokens) * scale_bytes(kv);
  }
};

}  // namespace parley::kernels

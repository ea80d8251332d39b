// The kernels' view of a KV block (kernels/common/paged_kv.cuh) must address exactly the
// bytes kv::BlockLayout does, and the staging rows must tile their buffer.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/common/paged_kv.cuh"
#include "kv/block_layout.h"

using namespace parley;

TEST_CASE("PagedKv offsets equal BlockLayout offsets for every type and shape") {
  CHECK(kernels::kKvBlockTokens == int(kv::kBlockTokens));
  for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
    for (kv::KvShape shape : {kv::KvShape{1, 1, 8}, kv::KvShape{3, 2, 64}, kv::KvShape{5, 4, 128},
                              kv::KvShape{2, 3, 6}}) {
      CAPTURE(int(type));
      CAPTURE(shape.n_layers);
      CAPTURE(shape.n_kv_heads);
      CAPTURE(shape.head_dim);
      const kv::BlockLayout l(type, shape);
      const kernels::PagedKv p{nullptr, int32_t(type), shape.n_layers, shape.n_kv_heads, shape.head_dim};
      CHECK(p.elem_bytes() == l.element_bytes());
      CHECK(p.block_bytes() == l.block_bytes());
      for (int layer = 0; layer < shape.n_layers; ++layer) {
        for (uint32_t slot : {0u, 1u, 7u, 15u}) {
          for (int head = 0; head < shape.n_kv_heads; ++head) {
            CHECK(p.k_offset(layer, int(slot), head) == l.k_offset(layer, slot, head));
            CHECK(p.v_offset(layer, int(slot), head) == l.v_offset(layer, slot, head));
            if (type == kv::KvType::int8) {
              CHECK(p.k_scale_offset(layer, int(slot), head) == l.k_scale_offset(layer, slot, head));
              CHECK(p.v_scale_offset(layer, int(slot), head) == l.v_scale_offset(layer, slot, head));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("KvStaging: every row and scale of every layer has its own bytes, and they fill it") {
  for (int32_t type : {1, 2, 3}) {
    const kernels::PagedKv p{nullptr, type, 3, 2, 8};
    for (int32_t n : {1, 5, 16}) {
      const kernels::KvStaging st{nullptr, n};
      const size_t total = st.layer_bytes(p) * 3;
      std::vector<int> owner(total, 0);
      const size_t row = kernels::KvStaging::row_bytes(p), sc = kernels::KvStaging::scale_bytes(p);
      for (int l = 0; l < 3; ++l) {
        for (int t = 0; t < n; ++t) {
          for (size_t b = 0; b < row; ++b) {
            ++owner[st.k_row(p, l, t) + b];
            ++owner[st.v_row(p, l, t) + b];
          }
          for (size_t b = 0; b < sc; ++b) {
            ++owner[st.k_scales(p, l, t) + b];
            ++owner[st.v_scales(p, l, t) + b];
          }
          if (sc) CHECK(st.k_scales(p, l, t) % 4 == 0);  // floats stay aligned
        }
      }
      for (size_t i = 0; i < total; ++i) REQUIRE(owner[i] == 1);
    }
  }
}

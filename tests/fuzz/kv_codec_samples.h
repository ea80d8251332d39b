// Sample KV blocks for the codec's tests and its fuzz entry point: every slot filled the way a
// backend fills it (INT8 quantized per token and head with s = max|x| / 127, F16 rounded,
// F32 as is), from Gaussian values with per-channel offsets, as K and V have.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kv/block_layout.h"
#include "model/dtype.h"

namespace parley::test {

inline std::vector<std::byte> sample_kv_block(const kv::BlockLayout& layout, uint32_t seed) {
  const kv::KvShape& s = layout.shape();
  std::vector<std::byte> block(layout.block_bytes());
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> offset(size_t(s.row()));
  for (float& o : offset) o = 2.0f * noise(rng);
  std::vector<float> x(size_t(s.head_dim));
  for (int32_t l = 0; l < s.n_layers; ++l) {
    for (uint32_t slot = 0; slot < kv::kBlockTokens; ++slot) {
      for (int32_t h = 0; h < s.n_kv_heads; ++h) {
        for (int which = 0; which < 2; ++which) {
          for (int32_t d = 0; d < s.head_dim; ++d) {
            x[size_t(d)] = noise(rng) + (which == 0 ? offset[size_t(h * s.head_dim + d)] : 0.0f);
          }
          std::byte* out = block.data() + (which == 0 ? layout.k_offset(l, slot, h)
                                                      : layout.v_offset(l, slot, h));
          if (layout.type() == kv::KvType::f32) {
            std::memcpy(out, x.data(), x.size() * sizeof(float));
          } else if (layout.type() == kv::KvType::f16) {
            for (size_t d = 0; d < x.size(); ++d) {
              const uint16_t h16 = model::f32_to_f16(x[d]);
              std::memcpy(out + 2 * d, &h16, 2);
            }
          } else {
            float amax = 0;
            for (float v : x) amax = std::max(amax, std::fabs(v));
            const float scale = amax / 127.0f;
            for (size_t d = 0; d < x.size(); ++d) {
              const float q = scale > 0 ? std::nearbyint(x[d] / scale) : 0.0f;
              out[d] = std::byte(uint8_t(int8_t(std::max(-127.0f, std::min(127.0f, q)))));
            }
            std::memcpy(block.data() + (which == 0 ? layout.k_scale_offset(l, slot, h)
                                                   : layout.v_scale_offset(l, slot, h)),
                        &scale, sizeof scale);
          }
        }
      }
    }
  }
  return block;
}

// Byte ranges {offset, length} of one slot in a block: K and V rows of every layer, and for
// INT8 their scales.
inline std::vector<std::pair<size_t, size_t>> kv_slot_ranges(const kv::BlockLayout& layout,
                                                             uint32_t slot) {
  const kv::KvShape& s = layout.shape();
  const size_t row_bytes = size_t(s.row()) * layout.element_bytes();
  std::vector<std::pair<size_t, size_t>> ranges;
  for (int32_t l = 0; l < s.n_layers; ++l) {
    ranges.emplace_back(layout.k_offset(l, slot, 0), row_bytes);
    ranges.emplace_back(layout.v_offset(l, slot, 0), row_bytes);
    if (layout.type() == kv::KvType::int8) {
      ranges.emplace_back(layout.k_scale_offset(l, slot, 0), size_t(s.n_kv_heads) * 4);
      ranges.emplace_back(layout.v_scale_offset(l, slot, 0), size_t(s.n_kv_heads) * 4);
    }
  }
  return ranges;
}

// `background` with slots [0, n_tokens) copied from `source`: what decoding a blob of
// `source` into `background` must give.
inline std::vector<std::byte> with_slots(const kv::BlockLayout& layout,
                                         std::vector<std::byte> background,
                                         const std::vector<std::byte>& source, uint32_t n_tokens) {
  for (uint32_t slot = 0; slot < n_tokens; ++slot) {
    for (auto [offset, length] : kv_slot_ranges(layout, slot)) {
      std::memcpy(background.data() + offset, source.data() + offset, length);
    }
  }
  return background;
}

}  // namespace parley::test

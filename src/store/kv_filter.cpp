#include "store/kv_filter.h"

#include <cstring>
#include <string>

#include "common/error.h"

namespace parley::store {
namespace {

// Sizes of the payload's sections for n tokens.
struct PayloadShape {
  size_t groups;         // 2 x n_layers: K and V of every layer, in that order
  size_t row;            // elements per token in a group: n_kv_heads x head_dim
  size_t element_bytes;  // 1, 2 or 4
  size_t group_bytes;    // n x row x element_bytes
  size_t scale_count;    // INT8: 2 x n_layers x n x n_kv_heads floats; else 0
  size_t values_bytes() const { return groups * group_bytes; }
  size_t total_bytes() const { return values_bytes() + scale_count * sizeof(float); }
};

PayloadShape payload_shape(const kv::BlockLayout& layout, uint32_t n_tokens) {
  require(n_tokens >= 1 && n_tokens <= kv::kBlockTokens, Status::internal, [&] {
    return "KV payload: n_tokens must be 1.." + std::to_string(kv::kBlockTokens) + ", got " +
           std::to_string(n_tokens);
  });
  const kv::KvShape& s = layout.shape();
  PayloadShape p{};
  p.groups = 2 * size_t(s.n_layers);
  p.row = size_t(s.n_kv_heads) * size_t(s.head_dim);
  p.element_bytes = layout.element_bytes();
  p.group_bytes = n_tokens * p.row * p.element_bytes;
  const bool int8 = layout.type() == kv::KvType::int8;
  p.scale_count = int8 ? p.groups * n_tokens * size_t(s.n_kv_heads) : 0;
  return p;
}

void require_size(size_t got, size_t want, const char* what) {
  require(got == want, Status::internal, [&] {
    return std::string("KV payload: ") + what + " holds " + std::to_string(got) +
           " bytes, expected " + std::to_string(want);
  });
}

const uint8_t* bytes(std::span<const std::byte> s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}
uint8_t* bytes(std::span<std::byte> s) { return reinterpret_cast<uint8_t*>(s.data()); }

// One INT8 group [n][row] -> [row][n], optionally as differences from the previous token.
void int8_to_channels(const uint8_t* in, uint8_t* out, uint32_t n, size_t row, bool delta) {
  for (uint32_t t = 0; t < n; ++t) {
    const uint8_t* cur = in + t * row;
    if (delta && t > 0) {
      const uint8_t* prev = cur - row;
      for (size_t c = 0; c < row; ++c) out[c * n + t] = uint8_t(cur[c] - prev[c]);
    } else {
      for (size_t c = 0; c < row; ++c) out[c * n + t] = cur[c];
    }
  }
}

void int8_from_channels(const uint8_t* in, uint8_t* out, uint32_t n, size_t row, bool delta) {
  for (uint32_t t = 0; t < n; ++t) {
    uint8_t* cur = out + t * row;
    if (delta && t > 0) {
      const uint8_t* prev = cur - row;
      for (size_t c = 0; c < row; ++c) cur[c] = uint8_t(in[c * n + t] + prev[c]);
    } else {
      for (size_t c = 0; c < row; ++c) cur[c] = in[c * n + t];
    }
  }
}

// `groups` x [n][row] elements of EB bytes -> EB byte planes, each [groups][row][n]. With
// n = 1 this is a plain byte-plane split of groups x row elements.
template <size_t EB>
void to_channel_planes(const uint8_t* in, uint8_t* out, size_t groups, uint32_t n, size_t row) {
  const size_t plane = groups * row * n;
  for (size_t g = 0; g < groups; ++g) {
    for (uint32_t t = 0; t < n; ++t) {
      const uint8_t* src = in + (g * n + t) * row * EB;
      uint8_t* dst = out + g * row * n + t;
      for (size_t c = 0; c < row; ++c) {
        for (size_t b = 0; b < EB; ++b) dst[b * plane + c * n] = src[c * EB + b];
      }
    }
  }
}

template <size_t EB>
void from_channel_planes(const uint8_t* in, uint8_t* out, size_t groups, uint32_t n, size_t row) {
  const size_t plane = groups * row * n;
  for (size_t g = 0; g < groups; ++g) {
    for (uint32_t t = 0; t < n; ++t) {
      uint8_t* dst = out + (g * n + t) * row * EB;
      const uint8_t* src = in + g * row * n + t;
      for (size_t c = 0; c < row; ++c) {
        for (size_t b = 0; b < EB; ++b) dst[c * EB + b] = src[b * plane + c * n];
      }
    }
  }
}

bool is_k_group(size_t g) { return g % 2 == 0; }

}  // namespace

size_t kv_payload_bytes(const kv::BlockLayout& layout, uint32_t n_tokens) {
  return payload_shape(layout, n_tokens).total_bytes();
}

void gather_kv_payload(const kv::BlockLayout& layout, const std::byte* block, uint32_t n_tokens,
                       std::span<std::byte> payload) {
  const PayloadShape p = payload_shape(layout, n_tokens);
  require_size(payload.size(), p.total_bytes(), "gather target");
  std::byte* out = payload.data();
  const int32_t n_layers = layout.shape().n_layers;
  for (int32_t l = 0; l < n_layers; ++l) {
    std::memcpy(out, block + layout.k_offset(l, 0, 0), p.group_bytes);
    std::memcpy(out + p.group_bytes, block + layout.v_offset(l, 0, 0), p.group_bytes);
    out += 2 * p.group_bytes;
  }
  if (p.scale_count == 0) return;
  const size_t scale_bytes = p.scale_count / p.groups * sizeof(float);
  for (int32_t l = 0; l < n_layers; ++l) {
    std::memcpy(out, block + layout.k_scale_offset(l, 0, 0), scale_bytes);
    std::memcpy(out + scale_bytes, block + layout.v_scale_offset(l, 0, 0), scale_bytes);
    out += 2 * scale_bytes;
  }
}

void scatter_kv_payload(const kv::BlockLayout& layout, std::span<const std::byte> payload,
                        uint32_t n_tokens, std::byte* block) {
  const PayloadShape p = payload_shape(layout, n_tokens);
  require_size(payload.size(), p.total_bytes(), "scatter source");
  const std::byte* in = payload.data();
  const int32_t n_layers = layout.shape().n_layers;
  for (int32_t l = 0; l < n_layers; ++l) {
    std::memcpy(block + layout.k_offset(l, 0, 0), in, p.group_bytes);
    std::memcpy(block + layout.v_offset(l, 0, 0), in + p.group_bytes, p.group_bytes);
    in += 2 * p.group_bytes;
  }
  if (p.scale_count == 0) return;
  const size_t scale_bytes = p.scale_count / p.groups * sizeof(float);
  for (int32_t l = 0; l < n_layers; ++l) {
    std::memcpy(block + layout.k_scale_offset(l, 0, 0), in, scale_bytes);
    std::memcpy(block + layout.v_scale_offset(l, 0, 0), in + scale_bytes, scale_bytes);
    in += 2 * scale_bytes;
  }
}

void filter_kv_payload(const kv::BlockLayout& layout, uint32_t n_tokens,
                       std::span<const std::byte> payload, std::span<std::byte> filtered) {
  const PayloadShape p = payload_shape(layout, n_tokens);
  require_size(payload.size(), p.total_bytes(), "filter source");
  require_size(filtered.size(), p.total_bytes(), "filter target");
  const uint8_t* in = bytes(payload);
  uint8_t* out = bytes(filtered);
  switch (layout.type()) {
    case kv::KvType::int8:
      for (size_t g = 0; g < p.groups; ++g) {
        const size_t at = g * p.group_bytes;
        int8_to_channels(in + at, out + at, n_tokens, p.row, is_k_group(g));
      }
      to_channel_planes<sizeof(float)>(in + p.values_bytes(), out + p.values_bytes(), 1, 1,
                                       p.scale_count);
      break;
    case kv::KvType::f16: to_channel_planes<2>(in, out, p.groups, n_tokens, p.row); break;
    case kv::KvType::f32: to_channel_planes<4>(in, out, p.groups, n_tokens, p.row); break;
  }
}

void unfilter_kv_payload(const kv::BlockLayout& layout, uint32_t n_tokens,
                         std::span<const std::byte> filtered, std::span<std::byte> payload) {
  const PayloadShape p = payload_shape(layout, n_tokens);
  require_size(filtered.size(), p.total_bytes(), "unfilter source");
  require_size(payload.size(), p.total_bytes(), "unfilter target");
  const uint8_t* in = bytes(filtered);
  uint8_t* out = bytes(payload);
  switch (layout.type()) {
    case kv::KvType::int8:
      for (size_t g = 0; g < p.groups; ++g) {
        const size_t at = g * p.group_bytes;
        int8_from_channels(in + at, out + at, n_tokens, p.row, is_k_group(g));
      }
      from_channel_planes<sizeof(float)>(in + p.values_bytes(), out + p.values_bytes(), 1, 1,
                                         p.scale_count);
      break;
    case kv::KvType::f16: from_channel_planes<2>(in, out, p.groups, n_tokens, p.row); break;
    case kv::KvType::f32: from_channel_planes<4>(in, out, p.groups, n_tokens, p.row); break;
  }
}

}  // namespace parley::store

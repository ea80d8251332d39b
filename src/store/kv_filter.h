// The bytes of a block that the codec stores, and the reversible filter that rearranges them
// before zstd.
//
// Payload: the filled slots [0, n) of one block, in block order: per layer the K slots then
// the V slots ([n][n_kv_heads][head_dim] elements each), then for INT8 the scales, per layer
// K then V ([n][n_kv_heads] floats each). n x kv_bytes_per_token bytes; the unfilled tail of
// the block is not part of it.
//
// Filter: the same bytes, regrouped so that zstd sees runs of similar ones:
//   - values channel-major: per layer, K/V, head and channel, the n values across tokens;
//   - INT8 K values delta-coded across tokens (mod 256): RoPE and per-channel offsets make
//     a K channel move slowly from token to token, V channels do not;
//   - F16/F32 values and INT8 scales split into byte planes (all first bytes, then all second
//     bytes, ...): sign and exponent bytes repeat, low mantissa bytes are noise.
// Measured on real KV (stories260K, and a random TinyLlama-shape model), see bench/RESULTS.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/block_layout.h"

namespace parley::store {

// n_tokens x kv_bytes_per_token(layout).
size_t kv_payload_bytes(const kv::BlockLayout& layout, uint32_t n_tokens);

// block (layout.block_bytes()) -> payload (kv_payload_bytes), and back. Scatter writes only
// the bytes of slots [0, n_tokens). Throws Error(internal) on n_tokens outside 1..16 or a
// wrong payload size.
void gather_kv_payload(const kv::BlockLayout& layout, const std::byte* block, uint32_t n_tokens,
                       std::span<std::byte> payload);
void scatter_kv_payload(const kv::BlockLayout& layout, std::span<const std::byte> payload,
                        uint32_t n_tokens, std::byte* block);

// payload -> filtered bytes of the same size, and the exact inverse (any bytes round-trip
// bitwise, whatever they hold). Same preconditions as above; the spans must not overlap.
void filter_kv_payload(const kv::BlockLayout& layout, uint32_t n_tokens,
                       std::span<const std::byte> payload, std::span<std::byte> filtered);
void unfilter_kv_payload(const kv::BlockLayout& layout, uint32_t n_tokens,
                         std::span<const std::byte> filtered, std::span<std::byte> payload);

}  // namespace parley::store

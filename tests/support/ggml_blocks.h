// Test-side writer of ggml's 4- to 6-bit block types (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K): each block's codes and scales are chosen from the values, packed into the bytes as
// ggml's block_* structs lay them out, and the values the bytes stand for are computed from
// those codes and scales by the types' formulas, never read back from the bytes. Written from
// the format's description, independently of src/model/ggml_quants.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace parley::test {

namespace ggml_block_type {
inline constexpr uint32_t Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q4_K = 12, Q5_K = 13,
                          Q6_K = 14;
}

inline constexpr uint32_t kGgmlBlockTypes[] = {
    ggml_block_type::Q4_0, ggml_block_type::Q4_1, ggml_block_type::Q5_0, ggml_block_type::Q5_1,
    ggml_block_type::Q4_K, ggml_block_type::Q5_K, ggml_block_type::Q6_K};

// "Q4_K" etc.
std::string ggml_block_type_name(uint32_t type);

// Values per block: 32, or 256 for the K types.
uint32_t ggml_block_values(uint32_t type);

struct GgmlBlocks {
  std::string bytes;          // the blocks, in order
  std::vector<float> values;  // what they stand for, one per input value
};

// `values` (a multiple of ggml_block_values(type) of them) quantized to `type`.
GgmlBlocks encode_ggml_blocks(uint32_t type, std::span<const float> values);

}  // namespace parley::test

// ggml's 4- to 6-bit block types as GGUF files hold them, converted at load to one of the
// block types the backends compute with (Q8_0, Q4_0, Q4_1 and Q5_1, dtype.h; Q4_0, Q4_1 and
// Q5_1 files are held as they are).
//
// Q5_0 fits Q5_1 exactly: the same scale, codes and fifth bits, and a minimum of -16 times
// the scale (a power of two apart, so exact in F16 wherever it fits). Q4_K fits Q4_1, and
// Q5_K Q5_1, per 32-value sub-block, their codes kept: the sub-block's scale d * s and minimum
// -dmin * m are rounded to F16, which moves each value by at most 2^-11 of the scale times the
// largest code (15 or 31) plus 2^-11 of the minimum, far below the codes' own step; 0.63 and
// 0.75 bytes per weight where Q8_0 takes 1.06. Q6_K is re-quantized to Q8_0 per 32 values:
// each value moves by at most half a Q8_0 step (1/254 of its 32 values' largest magnitude), a
// small part of its own step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/dtype.h"

namespace parley::model {

struct GgmlBlockType {
  uint32_t ggml_type = 0;
  std::string_view name;
  uint32_t block_values = 0;  // 32, or 256 for the K types
  uint32_t block_bytes = 0;
  DType held = DType::q8_0;  // what it is converted to: Q8_0, Q4_1 or Q5_1
  bool exact = false;        // whether every value converts without rounding
};

// The block type of ggml type id `ggml_type` when it is one converted at load, else nullptr.
const GgmlBlockType* convertible_block_type(uint32_t ggml_type);

// "Q5_0, Q4_K, ...": the types convertible_block_type() accepts, for messages.
std::string_view convertible_block_type_names();

// Bytes of a row of `n_values` values (a multiple of type.block_values).
constexpr uint64_t block_row_bytes(const GgmlBlockType& type, uint64_t n_values) {
  return n_values / type.block_values * type.block_bytes;
}

// One row of `n_values` values (a multiple of type.block_values) in `type` -> n_values / 32
// blocks of type.held at `dst` (aligned to 2). `src` needs no alignment. False, the row left
// incomplete, when a Q5_0 block's or a Q4_K or Q5_K sub-block's scale or minimum lies beyond
// F16's range (2^16), which Q4_1 and Q5_1 cannot hold, or when 32 finite values of a Q6_K
// block need a Q8_0 scale beyond it (a value past 127 * 65504, about 8.3e6).
bool convert_row(const GgmlBlockType& type, const std::byte* src, size_t n_values,
                 std::byte* dst);

}  // namespace parley::model

// ggml's 4-, 5- and 6-bit block types as GGUF files hold them, converted at load to Q8_0 so
// that every backend needs one quantized path. Q4_0 and Q5_0 fit Q8_0 exactly (the same F16
// scale, the codes made signed). The types with a minimum or with sub-block scales (Q4_1,
// Q5_1, Q4_K, Q5_K, Q6_K) are re-quantized per 32 values: each value moves by at most half a
// Q8_0 step (1/254 of its 32 values' largest magnitude), a small part of their own step.
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
  bool exact_in_q8_0 = false;
};

// The block type of ggml type id `ggml_type` when it is one loaded as Q8_0, else nullptr.
const GgmlBlockType* q8_0_convertible_type(uint32_t ggml_type);

// "Q4_0, Q4_1, ...": the types q8_0_convertible_type() accepts, for messages.
std::string_view q8_0_convertible_type_names();

// Bytes of a row of `n_values` values (a multiple of type.block_values).
constexpr uint64_t block_row_bytes(const GgmlBlockType& type, uint64_t n_values) {
  return n_values / type.block_values * type.block_bytes;
}

// One row of `n_values` values (a multiple of type.block_values) in `type` -> n_values / 32
// Q8_0 blocks. `src` needs no alignment.
void convert_row_to_q8_0(const GgmlBlockType& type, const std::byte* src, size_t n_values,
                         Q8Block* dst);

}  // namespace parley::model

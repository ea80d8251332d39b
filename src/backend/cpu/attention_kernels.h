// The SIMD kernel of CPU attention: the query heads of consecutive KV heads, for consecutive
// query rows, over the positions they may see, reading the cache's INT8/F16/F32 values in
// place. Best target of the running CPU (Highway dynamic dispatch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_view.h"

namespace parley::backend::cpu {

struct GroupJob {
  const float* q = nullptr;  // row 0: [kv_heads * group][head_dim], RoPE applied
  float* out = nullptr;      // row 0: [kv_heads * group][head_dim]
  int32_t group = 1;         // query heads per KV head
  int32_t kv_heads = 1;      // consecutive KV heads kv_head .. kv_head + kv_heads - 1
  int32_t rows = 1;          // consecutive query rows; row r attends first..last - (rows - 1 - r)
  size_t row_stride = 0;     // floats from one row's q (and out) to the next row's
  uint32_t first = 0;        // positions first..last (inclusive) are attended by the last row
  uint32_t last = 0;
  int32_t layer = 0;
  int32_t kv_head = 0;
};

// out_h = sum_t softmax_t(q_h . k_t / sqrt(head_dim)) v_t for every query head h of the job,
// in every row. Each K and V row is read once for all the heads that use it, and the rows of
// a job's KV heads sit side by side in each slot; INT8 rows enter the dot products as integers
// converted to float, their scale applied once per row. Each head's result has the bits it has
// when attended alone (rows = 1, kv_heads = 1). scratch is reused between calls.
void attend_group(const GroupJob& job, const kv::KvView& kv, std::vector<float>& scratch);

}  // namespace parley::backend::cpu

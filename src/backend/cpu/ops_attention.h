// Causal attention of new query rows over one layer of a sequence's KV cache.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_view.h"

namespace parley::backend::cpu {

class ThreadPool;

struct AttentionArgs {
  const float* q = nullptr;  // [n_rows, n_heads * head_dim], RoPE applied
  float* out = nullptr;      // [n_rows, n_heads * head_dim]
  size_t n_rows = 0;
  uint32_t start_pos = 0;  // position of row 0; row i attends to [.., start_pos + i]
  int32_t layer = 0;
  int32_t n_heads = 0;         // query heads; head h reads KV head h / (n_heads / n_kv_heads)
  int32_t sliding_window = 0;  // > 0: only the last sliding_window positions, itself included
};

// For every row and query head: softmax(q . k_t / sqrt(head_dim)) over the cached positions
// t it may see, times v_t. K/V are read from kv in their stored type, which must already hold
// the rows' own positions. Parallel over jobs of up to 4 consecutive rows (when no window cuts
// their start) and neighbouring KV heads (more of them when rows give too few jobs for the
// threads): the query heads of a group and the rows share each K/V row read. One head's result
// does not depend on the thread count or on which other rows or heads are in the call.
void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool);

}  // namespace parley::backend::cpu

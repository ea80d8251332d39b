#include "backend/cpu/ops_attention.h"

#include <vector>

#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/thread_pool.h"
#include "kernels/common/attention_window.cuh"

namespace parley::backend::cpu {

void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool) {
  const int32_t head_dim = kv.shape().head_dim;
  const int32_t n_kv_heads = kv.shape().n_kv_heads;
  const int32_t group = args.n_heads / n_kv_heads;  // query heads per KV head
  const size_t q_row = size_t(args.n_heads) * size_t(head_dim);
  pool.parallel_for(args.n_rows * size_t(n_kv_heads), [&](size_t begin, size_t end) {
    thread_local std::vector<float> scratch;  // kept between calls: no allocation per step
    for (size_t task = begin; task < end; ++task) {
      const size_t r = task / size_t(n_kv_heads);
      const int32_t kvh = int32_t(task % size_t(n_kv_heads));
      const uint32_t pos = args.start_pos + uint32_t(r);
      // Query heads kvh * group .. kvh * group + group - 1 sit side by side in the row.
      const size_t offset = r * q_row + size_t(kvh) * size_t(group) * size_t(head_dim);
      GroupJob job;
      job.q = args.q + offset;
      job.out = args.out + offset;
      job.group = group;
      job.first = uint32_t(kernels::window_first_key(int32_t(pos), args.sliding_window));
      job.last = pos;
      job.layer = args.layer;
      job.kv_head = kvh;
      attend_group(job, kv, scratch);
    }
  });
}

}  // namespace parley::backend::cpu

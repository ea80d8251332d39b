#include "backend/cpu/ops_attention.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/thread_pool.h"
#include "kernels/common/attention_window.cuh"

namespace parley::backend::cpu {
namespace {

// Query rows a job takes together in prefill: each K/V row read and converted once serves
// them all. More rows would make the last jobs of a causal prefill the long ones.
constexpr size_t kRowsPerJob = 4;

}  // namespace

void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool) {
  if (args.n_rows == 0) return;
  const int32_t head_dim = kv.shape().head_dim;
  const int32_t n_kv_heads = kv.shape().n_kv_heads;
  const int32_t group = args.n_heads / n_kv_heads;  // query heads per KV head
  const size_t q_row = size_t(args.n_heads) * size_t(head_dim);
  // Rows share a job only when they all start at the same position (no row's window cuts
  // its start off).
  const uint32_t last_pos = args.start_pos + uint32_t(args.n_rows) - 1;
  const bool same_first = kernels::window_first_key(int32_t(last_pos), args.sliding_window) == 0;
  const size_t rows_per_job = same_first ? kRowsPerJob : 1;
  const size_t n_jobs = (args.n_rows + rows_per_job - 1) / rows_per_job;
  pool.parallel_for(n_jobs * size_t(n_kv_heads), [&](size_t begin, size_t end) {
    thread_local std::vector<float> scratch;  // kept between calls: no allocation per step
    for (size_t task = begin; task < end; ++task) {
      const size_t r0 = task / size_t(n_kv_heads) * rows_per_job;
      const size_t rows = std::min(rows_per_job, args.n_rows - r0);
      const int32_t kvh = int32_t(task % size_t(n_kv_heads));
      const uint32_t pos = args.start_pos + uint32_t(r0 + rows) - 1;  // of the job's last row
      // Query heads kvh * group .. kvh * group + group - 1 sit side by side in a row.
      const size_t offset = r0 * q_row + size_t(kvh) * size_t(group) * size_t(head_dim);
      GroupJob job;
      job.q = args.q + offset;
      job.out = args.out + offset;
      job.group = group;
      job.rows = int32_t(rows);
      job.row_stride = q_row;
      job.first = uint32_t(kernels::window_first_key(int32_t(pos), args.sliding_window));
      job.last = pos;
      job.layer = args.layer;
      job.kv_head = kvh;
      attend_group(job, kv, scratch);
    }
  });
}

}  // namespace parley::backend::cpu

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

// A job takes as many neighbouring KV heads as leave at least this many jobs per thread: their
// rows sit side by side in each slot, so one position's K/V bytes are read as one run and its
// bookkeeping serves them all, while a few jobs per thread keep the threads finishing together.
// Decode splits the KV heads; a long prefill has jobs enough in its rows and takes the most.
constexpr size_t kJobsPerThread = 2;

// At most this many K values per position in one job (its KV heads x head_dim): the kernel
// converts the K rows of 8-16 positions into a buffer that should stay in L1 (16 KiB here).
constexpr size_t kMaxJobValues = 256;

}  // namespace

void attention(const AttentionArgs& args, const kv::KvView& kv, ThreadPool& pool) {
  if (args.n_rows == 0) return;
  const int32_t head_dim = kv.shape().head_dim;
  const size_t n_kv_heads = size_t(kv.shape().n_kv_heads);
  const int32_t group = args.n_heads / int32_t(n_kv_heads);  // query heads per KV head
  const size_t q_row = size_t(args.n_heads) * size_t(head_dim);
  // Rows share a job only when they all start at the same position (no row's window cuts
  // its start off).
  const uint32_t last_pos = args.start_pos + uint32_t(args.n_rows) - 1;
  const bool same_first = kernels::window_first_key(int32_t(last_pos), args.sliding_window) == 0;
  const size_t rows_per_job = same_first ? kRowsPerJob : 1;
  const size_t row_jobs = (args.n_rows + rows_per_job - 1) / rows_per_job;
  const size_t wanted_jobs = kJobsPerThread * pool.size();
  const size_t most_heads = std::clamp<size_t>(kMaxJobValues / size_t(head_dim), 1, n_kv_heads);
  const size_t heads_per_job =
      std::clamp<size_t>(row_jobs * n_kv_heads / wanted_jobs, 1, most_heads);
  const size_t head_jobs = (n_kv_heads + heads_per_job - 1) / heads_per_job;
  pool.parallel_for(row_jobs * head_jobs, [&](size_t begin, size_t end) {
    thread_local std::vector<float> scratch;  // kept between calls: no allocation per step
    for (size_t task = begin; task < end; ++task) {
      const size_t r0 = task / head_jobs * rows_per_job;
      const size_t rows = std::min(rows_per_job, args.n_rows - r0);
      const size_t kvh = task % head_jobs * heads_per_job;
      const uint32_t pos = args.start_pos + uint32_t(r0 + rows) - 1;  // of the job's last row
      // The query heads of KV heads kvh, kvh + 1, ... sit side by side in a row.
      const size_t offset = r0 * q_row + kvh * size_t(group) * size_t(head_dim);
      GroupJob job;
      job.q = args.q + offset;
      job.out = args.out + offset;
      job.group = group;
      job.kv_heads = int32_t(std::min(heads_per_job, n_kv_heads - kvh));
      job.rows = int32_t(rows);
      job.row_stride = q_row;
      job.first = uint32_t(kernels::window_first_key(int32_t(pos), args.sliding_window));
      job.last = pos;
      job.layer = args.layer;
      job.kv_head = int32_t(kvh);
      attend_group(job, kv, scratch);
    }
  });
}

}  // namespace parley::backend::cpu

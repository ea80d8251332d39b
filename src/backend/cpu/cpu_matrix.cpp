#include "backend/cpu/cpu_matrix.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/packed_arena.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "model/dtype.h"

namespace parley::backend::cpu {
namespace {

constexpr size_t kLine = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The scales padded to 32 bytes, so that the kernels read them in whole vectors.
size_t packed_stride(size_t cols) {
  return round_up(cols + round_up(cols / model::kQ8BlockValues * sizeof(uint16_t), 32), kLine);
}

}  // namespace

void CpuMatrix::FreeBytes::operator()(std::byte* p) const { std::free(p); }

size_t CpuMatrix::packed_bytes(const model::TensorView& w) {
  if (w.dtype != model::DType::q8_0) return 0;
  return std::max(size_t(w.rows) * packed_stride(size_t(w.cols)), kLine);
}

CpuMatrix::CpuMatrix(const model::TensorView& w, ThreadPool* pool,
                     std::span<const std::span<const std::byte>> mapped_files,
                     PackedArena* arena)
    : view_(w) {
  if (w.dtype != model::DType::q8_0) return;
  const size_t rows = size_t(w.rows), cols = size_t(w.cols);
  require(cols % model::kQ8BlockValues == 0, Status::internal,
          "Q8_0 matrix " + w.name + " has a row length not a multiple of 32");
  stride_ = packed_stride(cols);
  const size_t bytes = packed_bytes(w);
  std::byte* packed = nullptr;
  if (arena) {
    packed = arena->take(bytes);
  } else {
    // aligned_alloc wants a size that is a multiple of the alignment: stride_ is one.
    owned_.reset(static_cast<std::byte*>(std::aligned_alloc(kLine, bytes)));
    if (!owned_) throw std::bad_alloc();
    packed = owned_.get();
  }
  const size_t blocks = cols / model::kQ8BlockValues;
  const auto pack_rows = [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const auto* src = reinterpret_cast<const model::Q8Block*>(w.row(int64_t(r)));
      std::byte* row = packed + r * stride_;
      auto* values = reinterpret_cast<int8_t*>(row);
      auto* scales = reinterpret_cast<uint16_t*>(row + cols);
      for (size_t b = 0; b < blocks; ++b) {
        std::memcpy(values + b * model::kQ8BlockValues, src[b].q, model::kQ8BlockValues);
        scales[b] = src[b].d;
      }
      const size_t used = cols + blocks * sizeof(uint16_t);
      std::memset(row + used, 0, stride_ - used);  // every byte defined, the padding too
    }
  };
  if (pool) {
    pool->parallel_for(rows, pack_rows);
  } else {
    pack_rows(0, rows);
  }
  view_.data = packed;
  view_.n_bytes = rows * stride_;
  release_source_pages(w, mapped_files);
}

void CpuMatrix::dequantize_row(int64_t r, float* out) const {
  if (!packed()) {
    cpu::dequantize_row(view_, r, out);
    return;
  }
  const int8_t* q = q8_values(size_t(r));
  const uint16_t* d = q8_scales(size_t(r));
  for (size_t k = 0; k < size_t(cols()); ++k) {
    out[k] = model::f16_to_f32(d[k / model::kQ8BlockValues]) * float(q[k]);
  }
}

void release_source_pages(const model::TensorView& source,
                          std::span<const std::span<const std::byte>> mapped_files) {
  const auto inside = [&](std::span<const std::byte> file) {
    return source.data >= file.data() && source.data + source.n_bytes <= file.data() + file.size();
  };
  if (std::none_of(mapped_files.begin(), mapped_files.end(), inside)) return;
  const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
  const auto begin = (uintptr_t(source.data) + page - 1) / page * page;
  const auto end = (uintptr_t(source.data) + source.n_bytes) / page * page;
  // A private mapping never written: dropped pages come back from the file, never as zeros.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace parley::backend::cpu

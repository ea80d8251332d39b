#include "backend/cpu/cpu_matrix.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/matrix_arena.h"
#include "backend/cpu/thread_pool.h"
#include "common/alignment.h"
#include "common/error.h"
#include "model/dtype.h"

namespace parley::backend::cpu {
namespace {

constexpr size_t kLine = 64;

// The scales padded to 32 bytes, so that the kernels read them in whole vectors.
size_t packed_stride(size_t cols) {
  return round_up(cols + round_up(cols / model::kQ8BlockValues * sizeof(uint16_t), 32), kLine);
}

}  // namespace

void CpuMatrix::FreeBytes::operator()(std::byte* p) const { std::free(p); }

size_t CpuMatrix::arena_bytes(const model::TensorView& w,
                              std::span<const std::span<const std::byte>> mapped_files) {
  if (w.dtype == model::DType::q8_0) {
    return std::max(size_t(w.rows) * packed_stride(size_t(w.cols)), kLine);
  }
  return in_mapped_file(w, mapped_files) ? w.n_bytes : 0;
}

CpuMatrix::CpuMatrix(const model::TensorView& w, ThreadPool* pool,
                     std::span<const std::span<const std::byte>> mapped_files,
                     MatrixArena* arena)
    : view_(w) {
  const auto on_pool = [&](size_t rows, const auto& fn) {
    if (pool) {
      pool->parallel_for(rows, fn);
    } else {
      fn(size_t(0), rows);
    }
  };
  if (w.dtype != model::DType::q8_0) {
    if (!arena || !in_mapped_file(w, mapped_files)) return;
    std::byte* copy = arena->take(w.n_bytes);
    const size_t row_bytes = model::row_bytes(w.dtype, size_t(w.cols));
    on_pool(size_t(w.rows), [&](size_t r0, size_t r1) {
      std::memcpy(copy + r0 * row_bytes, w.data + r0 * row_bytes, (r1 - r0) * row_bytes);
    });
    view_.data = copy;
    release_source_pages(w, mapped_files);
    return;
  }
  const size_t rows = size_t(w.rows), cols = size_t(w.cols);
  require(cols % model::kQ8BlockValues == 0, Status::internal,
          "Q8_0 matrix " + w.name + " has a row length not a multiple of 32");
  stride_ = packed_stride(cols);
  const size_t bytes = arena_bytes(w, mapped_files);
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
  on_pool(rows, pack_rows);
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

bool in_mapped_file(const model::TensorView& w,
                    std::span<const std::span<const std::byte>> mapped_files) {
  return std::any_of(mapped_files.begin(), mapped_files.end(), [&](auto file) {
    return w.data >= file.data() && w.data + w.n_bytes <= file.data() + file.size();
  });
}

void release_source_pages(const model::TensorView& source,
                          std::span<const std::span<const std::byte>> mapped_files) {
  if (!in_mapped_file(source, mapped_files)) return;
  const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
  const auto begin = (uintptr_t(source.data) + page - 1) / page * page;
  const auto end = (uintptr_t(source.data) + source.n_bytes) / page * page;
  // A private mapping never written: dropped pages come back from the file, never as zeros.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace parley::backend::cpu

// The copies the CPU products read (packed Q8_0 rows, tiled F32/F16/BF16 rows) and the arena
// that holds them; a copy needs its source no more.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_matrix.h"
#include "backend/cpu/matrix_arena.h"
#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/thread_pool.h"
#include "model/mapped_file.h"
#include "model/weight_release.h"
#include "support/error_check.h"
#include "support/process_memory.h"
#include "support/shared_assets.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

using model::DType;

// The first line of `file`, or "" when it cannot be read.
std::string first_line(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// AnonHugePages of the mapping that holds p (/proc/self/smaps), in bytes.
size_t huge_page_bytes_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return size_t(std::stoull(line.substr(14))) * 1024;
    }
  }
  return 0;
}

// w's bytes written to a file and mapped; `view` is w over the mapping.
struct TensorInFile {
  explicit TensorInFile(const model::TensorView& w)
      : file(written(w, dir / "w.bin")), view(w) {
    view.data = file.bytes().data();
  }
  static std::string written(const model::TensorView& w, const std::filesystem::path& path) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.data), std::streamsize(w.n_bytes));
    return path.string();
  }
  TempDir dir;
  model::MappedFile file;
  model::TensorView view;
};

// Every row of m, dequantized, is w's row exactly (as a float: Q4_1's d * code + m is exact
// in double, and rounded once in float).
void check_every_row(const backend::cpu::CpuMatrix& m, const model::TensorView& w) {
  const std::vector<double> all = decode_tensor(w);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    m.dequantize_row(r, row.data());
    for (int64_t k = 0; k < w.cols; ++k) {
      CHECK(row[size_t(k)] == float(all[size_t(r * w.cols + k)]));
    }
  }
}

}  // namespace

TEST_CASE("a packed matrix holds the file's rows: values, scales, 64-byte rows, tiled") {
  std::mt19937 rng(13);
  for (bool in_arena : {false, true}) {
    for (int64_t cols : {int64_t(32), int64_t(96), int64_t(768), int64_t(5632)}) {
      model::Weights owner;
      const int64_t rows = 5;
      const model::TensorView w = make_tensor(owner, "w", DType::q8_0, rows, cols,
                                              random_values(size_t(rows * cols), 3.0f, rng));
      // In an arena, after a first allocation that leaves the next one off a line boundary.
      backend::cpu::MatrixArena arena(backend::cpu::MatrixArena::bytes_for(24) +
                                      backend::cpu::CpuMatrix::copy_bytes(w));
      if (in_arena) arena.take(24);
      const backend::cpu::CpuMatrix m(w, nullptr, in_arena ? &arena : nullptr);
      INFO("cols " << cols << (in_arena ? ", in an arena" : ", owned"));
      CHECK(reinterpret_cast<uintptr_t>(m.view().data) % 64 == 0);
      // Scales padded to 32 bytes (the kernels read them in whole vectors), rows to 64.
      const size_t scale_bytes = size_t(cols) / 32 * 2, padded = (scale_bytes + 31) / 32 * 32;
      const size_t row_bytes = m.packed_row_bytes();
      CHECK(row_bytes % 64 == 0);
      CHECK(row_bytes >= size_t(cols) + padded);
      CHECK(row_bytes < size_t(cols) + padded + 64);
      CHECK(m.tile_stride() == 4 * row_bytes);
      CHECK(m.view().n_bytes == 2 * m.tile_stride());  // 5 rows: two tiles
      CHECK(m.view().n_bytes <= backend::cpu::CpuMatrix::copy_bytes(w));
      // Every byte of the packed rows where the tiles put it; padding and the missing rows of
      // the last tile zeros.
      std::vector<std::byte> expected(m.view().n_bytes, std::byte{0});
      const auto at = [&](size_t r, size_t b) {
        return backend::cpu::CpuMatrix::tiled_offset(m.tile_stride(), r, b);
      };
      for (size_t r = 0; r < size_t(rows); ++r) {
        const auto* blocks = reinterpret_cast<const model::Q8Block*>(w.row(int64_t(r)));
        for (size_t b = 0; b < size_t(cols) / 32; ++b) {
          for (size_t k = 0; k < 32; ++k) expected[at(r, b * 32 + k)] = std::byte(blocks[b].q[k]);
          std::memcpy(&expected[at(r, size_t(cols) + 2 * b)], &blocks[b].d, 2);
        }
      }
      CHECK(std::equal(expected.begin(), expected.end(), m.view().data));
      check_every_row(m, w);
    }
  }
}

// Q4_0, Q4_1 and Q5_1 blocks share their low bits' layout (ggml's value k in byte k % 16 of
// the 16 code bytes, the low nibble for k < 16) after d; Q4_1 and Q5_1 add a minimum m, Q5_1
// the word of fifth bits between m and the codes.
template <class Block>
void check_packed_nibbles(DType type, int64_t cols, std::mt19937& rng) {
  model::Weights owner;
  const int64_t rows = 6;
  const model::TensorView w =
      make_tensor(owner, "w", type, rows, cols, random_values(size_t(rows * cols), 3.0f, rng));
  const backend::cpu::CpuMatrix m(w);
  INFO(model::dtype_name(type) << " cols " << cols);
  CHECK(m.nibbles());
  // Values in cols / 2 bytes, then scales and (Q4_1, Q5_1) minimums each padded to 32 bytes,
  // (Q5_1) the fifth bits from the next multiple of 64, rows to 64.
  const bool q5 = type == DType::q5_1, minimums = type != DType::q4_0;
  const size_t values = (size_t(cols) / 2 + 31) / 32 * 32;
  const size_t scales = (size_t(cols) / 32 * 2 + 31) / 32 * 32;
  const size_t fifth_at = (values + 2 * scales + 63) / 64 * 64;
  CHECK(m.packed_value_bytes() == values);
  if (minimums) CHECK(m.minimums_offset() == values + scales);
  if (q5) CHECK(m.fifth_bits_offset() == fifth_at);
  const size_t end = q5 ? fifth_at + size_t(cols) / 32 * 4 : values + (minimums ? 2 : 1) * scales;
  CHECK(m.packed_row_bytes() == (end + 63) / 64 * 64);
  CHECK(m.view().n_bytes == backend::cpu::CpuMatrix::copy_bytes(w));
  std::vector<std::byte> expected(m.view().n_bytes, std::byte{0});
  const auto at = [&](size_t r, size_t b) {
    return backend::cpu::CpuMatrix::tiled_offset(m.tile_stride(), r, b);
  };
  for (size_t r = 0; r < size_t(rows); ++r) {
    const auto* blocks = reinterpret_cast<const Block*>(w.row(int64_t(r)));
    for (size_t b = 0; b < size_t(cols) / 32; ++b) {
      // Packed: blocks 2i and 2i + 1 in the low and high nibbles of the 32 bytes from 32i,
      // value k in byte k.
      for (size_t k = 0; k < 32; ++k) {
        const int code = k < 16 ? blocks[b].q[k] & 15 : blocks[b].q[k - 16] >> 4;
        expected[at(r, b / 2 * 32 + k)] |= std::byte(code << (b % 2 * 4));
      }
      std::memcpy(&expected[at(r, values + 2 * b)], &blocks[b].d, 2);
      if constexpr (sizeof(Block) != sizeof(model::Q4_0Block)) {
        std::memcpy(&expected[at(r, values + scales + 2 * b)], &blocks[b].m, 2);
      }
      if constexpr (sizeof(Block) == sizeof(model::Q5_1Block)) {
        for (size_t i = 0; i < 4; ++i) {
          expected[at(r, fifth_at + 4 * b + i)] = std::byte(blocks[b].qh[i]);
        }
      }
    }
  }
  CHECK(std::equal(expected.begin(), expected.end(), m.view().data));
  check_every_row(m, w);
}

TEST_CASE("a packed Q4_0, Q4_1 or Q5_1 matrix holds its codes in pairs of blocks, then scales") {
  std::mt19937 rng(17);
  for (int64_t cols : {int64_t(32), int64_t(544), int64_t(5632)}) {
    check_packed_nibbles<model::Q4_0Block>(DType::q4_0, cols, rng);
    check_packed_nibbles<model::Q4_1Block>(DType::q4_1, cols, rng);
    check_packed_nibbles<model::Q5_1Block>(DType::q5_1, cols, rng);
  }
}

TEST_CASE("a tiled matrix holds each row's 64-byte chunks side by side with its tile's") {
  std::mt19937 rng(17);
  for (DType type : {DType::f32, DType::f16, DType::bf16}) {
    for (bool in_arena : {false, true}) {
      for (int64_t rows : {int64_t(1), int64_t(3), int64_t(4), int64_t(9)}) {
        for (int64_t cols : {int64_t(1), int64_t(15), int64_t(32), int64_t(33), int64_t(100)}) {
          model::Weights owner;
          const model::TensorView w = make_tensor(owner, "w", type, rows, cols,
                                                  random_values(size_t(rows * cols), 2.0f, rng));
          backend::cpu::MatrixArena arena(backend::cpu::MatrixArena::bytes_for(24) +
                                          backend::cpu::CpuMatrix::copy_bytes(w));
          if (in_arena) arena.take(24);
          const backend::cpu::CpuMatrix m(w, nullptr, in_arena ? &arena : nullptr);
          INFO(model::dtype_name(type) << " [" << rows << ", " << cols << "]"
                                       << (in_arena ? ", in an arena" : ", owned"));
          const size_t row_bytes = model::row_bytes(type, size_t(cols));
          const size_t chunks = (row_bytes + 63) / 64, tiles = size_t(rows + 3) / 4;
          CHECK(m.tile_stride() == chunks * 4 * 64);
          CHECK(m.view().n_bytes == tiles * m.tile_stride());
          CHECK(m.view().data != w.data);
          CHECK(reinterpret_cast<uintptr_t>(m.view().data) % 64 == 0);
          // Every byte where the layout puts it; the rest zeros.
          std::vector<std::byte> expected(m.view().n_bytes, std::byte{0});
          for (size_t r = 0; r < size_t(rows); ++r) {
            for (size_t b = 0; b < row_bytes; ++b) {
              const size_t at = r / 4 * m.tile_stride() + b / 64 * 256 + r % 4 * 64 + b % 64;
              CHECK(backend::cpu::CpuMatrix::tiled_offset(m.tile_stride(), r, b) == at);
              expected[at] = w.row(int64_t(r))[b];
            }
          }
          CHECK(std::equal(expected.begin(), expected.end(), m.view().data));
          check_every_row(m, w);
        }
      }
    }
  }
}

TEST_CASE("a matrix arena hands out 64-byte aligned, zeroed, disjoint runs and refuses more") {
  backend::cpu::MatrixArena arena(64 + 128 + 4096);
  CHECK(backend::cpu::MatrixArena::bytes_for(1) == 64);
  CHECK(backend::cpu::MatrixArena::bytes_for(128) == 128);
  std::byte* a = arena.take(1);
  std::byte* b = arena.take(100);
  std::byte* c = arena.take(4096);
  for (std::byte* p : {a, b, c}) CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  CHECK(b == a + 64);
  CHECK(c == b + 128);
  CHECK(std::all_of(c, c + 4096, [](std::byte x) { return x == std::byte{0}; }));
  std::fill(a, c + 4096, std::byte{7});  // every byte of the room is writable
  CHECK_PARLEY_ERROR(arena.take(1), Status::internal, "more than the 4288 bytes");
}

TEST_CASE("a matrix arena's memory comes in huge pages where the kernel offers them") {
  const std::string mode = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  if (mode.find("[never]") != std::string::npos || mode.empty()) {
    MESSAGE("transparent huge pages are off here (" << mode << "): nothing to check");
    return;
  }
  backend::cpu::MatrixArena arena(size_t(16) << 20);
  std::byte* p = arena.take(size_t(16) << 20);
  CHECK(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20) == 0);
  std::fill(p, p + (size_t(16) << 20), std::byte{1});
  const size_t huge = huge_page_bytes_at(p);
  INFO("THP " << mode << ": " << huge << " bytes of the arena in huge pages");
  // The kernel may lack free 2 MiB pages for some of them; none at all means no hint given.
  CHECK(huge >= (size_t(4) << 20));
}

TEST_CASE("a Q8_0 matrix packed from a mapped file stays whole when the file's pages go") {
  std::mt19937 rng(5);
  model::Weights owner;
  const int64_t rows = 8192, cols = 1024;  // 8.5 MiB of Q8_0
  const model::TensorView w = make_tensor(owner, "w", DType::q8_0, rows, cols,
                                          random_values(size_t(rows * cols), 1.0f, rng));
  const TensorInFile in_file(w);
  const model::TensorView& source = in_file.view;
  const std::vector<std::span<const std::byte>> mapped{in_file.file.bytes()};
  const std::vector<double> all = decode_tensor(source);  // touches every page
  const size_t touched = resident_file_bytes();

  const backend::cpu::CpuMatrix m(source, nullptr);
  model::drop_file_pages(source, mapped);
  const size_t released = resident_file_bytes();
  INFO("RssFile " << touched << " -> " << released);
  CHECK(released + (6u << 20) <= touched);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r : {int64_t(0), rows - 1}) {
    m.dequantize_row(r, row.data());
    for (int64_t k = 0; k < cols; ++k) CHECK(double(row[size_t(k)]) == all[size_t(r * cols + k)]);
  }
  CHECK(decode_tensor(source) == all);  // the file's bytes come back, not zeros
}

TEST_CASE("F32, F16 and BF16 matrices tiled from a mapped file stay whole when its pages go") {
  std::mt19937 rng(9);
  backend::cpu::ThreadPool pool(3);
  for (DType type : {DType::f32, DType::f16, DType::bf16}) {
    INFO(model::dtype_name(type));
    model::Weights owner;
    // 8 MiB and more, an odd row length, so that whole pages are released and rows split
    // unevenly between the copying threads.
    const int64_t cols = 1000, rows = type == DType::f32 ? 2100 : 4200;
    const model::TensorView w = make_tensor(owner, "w", type, rows, cols,
                                            random_values(size_t(rows * cols), 1.0f, rng));
    const TensorInFile in_file(w);
    const model::TensorView& source = in_file.view;
    const std::vector<std::span<const std::byte>> mapped{in_file.file.bytes()};

    backend::cpu::MatrixArena arena(backend::cpu::CpuMatrix::copy_bytes(source));
    const std::vector<double> all = decode_tensor(source);  // touches every page
    const size_t touched = resident_file_bytes();
    const backend::cpu::CpuMatrix m(source, &pool, &arena);
    model::drop_file_pages(source, mapped);
    const size_t released = resident_file_bytes();
    INFO("RssFile " << touched << " -> " << released);
    CHECK(released + (6u << 20) <= touched);
    CHECK(m.view().data != source.data);
    // The copy's threads split the tiles; each row where the layout puts it.
    const size_t row_bytes = model::row_bytes(type, size_t(cols));
    for (int64_t r : {int64_t(0), rows / 2 + 1, rows - 1}) {
      for (size_t b = 0; b < row_bytes; b += 7) {
        const size_t at = backend::cpu::CpuMatrix::tiled_offset(m.tile_stride(), size_t(r), b);
        CHECK(m.view().data[at] == w.row(r)[b]);
      }
    }
    std::vector<float> row(static_cast<size_t>(cols));
    m.dequantize_row(rows - 1, row.data());
    for (int64_t k = 0; k < cols; ++k) {
      CHECK(double(row[size_t(k)]) == all[size_t((rows - 1) * cols + k)]);
    }
    // The products over the copy of the file give the bits of those over a copy of the
    // model's own bytes.
    const std::vector<float> x = random_values(size_t(cols), 1.0f, rng);
    std::vector<float> from_file(static_cast<size_t>(rows)), from_model(from_file.size());
    backend::cpu::matmul(m, x.data(), 1, from_file.data(), pool);
    backend::cpu::matmul(backend::cpu::CpuMatrix(w), x.data(), 1, from_model.data(), pool);
    CHECK(from_file == from_model);
    CHECK(decode_tensor(source) == all);  // the file's bytes come back, not zeros
  }
}

}  // namespace parley::test

// The packed Q8_0 rows the CPU products read, the copies of other matrices that lie in a
// model file, and the release of a copied matrix's source pages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
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
#include "support/error_check.h"
#include "support/shared_assets.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

using model::DType;

// RssFile of /proc/self/status, in bytes: file pages mapped into this process.
size_t resident_file_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  size_t kb = 0;
  while (status >> key) {
    if (key == "RssFile:") {
      status >> kb;
      return kb * 1024;
    }
  }
  FAIL("no RssFile line in /proc/self/status");
  return 0;
}

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

}  // namespace

TEST_CASE("a packed matrix holds the file's rows: values, scales, 64-byte rows") {
  std::mt19937 rng(13);
  for (bool in_arena : {false, true}) {
    for (int64_t cols : {int64_t(32), int64_t(96), int64_t(768), int64_t(5632)}) {
      model::Weights owner;
      const int64_t rows = 5;
      const model::TensorView w = make_tensor(owner, "w", DType::q8_0, rows, cols,
                                              random_values(size_t(rows * cols), 3.0f, rng));
      // In an arena, after a first allocation that leaves the next one off a line boundary.
      backend::cpu::MatrixArena arena(backend::cpu::MatrixArena::bytes_for(24) +
                                      backend::cpu::CpuMatrix::arena_bytes(w, {}));
      if (in_arena) arena.take(24);
      const backend::cpu::CpuMatrix m(w, nullptr, {}, in_arena ? &arena : nullptr);
      INFO("cols " << cols << (in_arena ? ", in an arena" : ", owned"));
      REQUIRE(m.packed());
      CHECK(m.view().n_bytes <= backend::cpu::CpuMatrix::arena_bytes(w, {}));
      // Scales padded to 32 bytes (the kernels read them in whole vectors), rows to 64.
      const size_t scale_bytes = size_t(cols) / 32 * 2, padded = (scale_bytes + 31) / 32 * 32;
      CHECK(m.q8_stride() % 64 == 0);
      CHECK(m.q8_stride() >= size_t(cols) + padded);
      CHECK(m.q8_stride() < size_t(cols) + padded + 64);
      const std::vector<double> all = decode_tensor(w);
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(reinterpret_cast<uintptr_t>(m.q8_values(size_t(r))) % 64 == 0);
        const auto* blocks = reinterpret_cast<const model::Q8Block*>(w.row(r));
        for (int64_t b = 0; b < cols / 32; ++b) {
          CHECK(m.q8_scales(size_t(r))[b] == blocks[b].d);
          CHECK(std::equal(blocks[b].q, blocks[b].q + 32, m.q8_values(size_t(r)) + b * 32));
        }
        const auto* scales = reinterpret_cast<const std::byte*>(m.q8_scales(size_t(r)));
        const auto* values = reinterpret_cast<const std::byte*>(m.q8_values(size_t(r)));
        const std::byte* tail = scales + scale_bytes;
        const std::byte* next = values + m.q8_stride();
        CHECK(std::all_of(tail, next, [](std::byte b) { return b == std::byte{0}; }));
        m.dequantize_row(r, row.data());
        for (int64_t k = 0; k < cols; ++k) {
          CHECK(double(row[size_t(k)]) == all[size_t(r * cols + k)]);
        }
      }
    }
  }
  // Other types outside a mapped file are the model's bytes, not copied, arena or not.
  model::Weights owner;
  const model::TensorView f =
      make_tensor(owner, "f", DType::f16, 3, 40, random_values(120, 1.0f, rng));
  CHECK(backend::cpu::CpuMatrix::arena_bytes(f, {}) == 0);
  backend::cpu::MatrixArena arena(4096);
  for (backend::cpu::MatrixArena* a : {static_cast<backend::cpu::MatrixArena*>(nullptr), &arena}) {
    const backend::cpu::CpuMatrix m(f, nullptr, {}, a);
    CHECK_FALSE(m.packed());
    CHECK(m.view().data == f.data);
    std::vector<float> row(40);
    m.dequantize_row(2, row.data());
    const std::vector<double> all = decode_tensor(f);
    for (size_t k = 0; k < row.size(); ++k) CHECK(double(row[k]) == all[80 + k]);
  }
  CHECK_NOTHROW(arena.take(4096));  // none of the room was used
}

TEST_CASE("a packed arena hands out 64-byte aligned, zeroed, disjoint runs and refuses more") {
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

TEST_CASE("a matrix's source pages leave the process when they are a mapped file's") {
  TempDir dir;
  const size_t bytes = 8u << 20;
  std::vector<char> content(bytes);
  std::mt19937 rng(3);
  for (char& c : content) c = char(rng());
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out.write(content.data(), std::streamsize(bytes));
  }
  const model::MappedFile file((dir / "weights.bin").string());
  model::TensorView source;
  source.name = "source";
  source.data = file.bytes().data();
  source.n_bytes = bytes;
  const auto sum = [&] {
    uint64_t s = 0;
    for (size_t i = 0; i < bytes; i += 512) s += uint8_t(source.data[i]);
    return s;
  };
  const uint64_t expected = sum();  // touches every page
  const size_t touched = resident_file_bytes();

  // Not among the mapped files: left alone.
  backend::cpu::release_source_pages(source, {});
  CHECK(resident_file_bytes() + (1u << 20) > touched);

  const std::vector<std::span<const std::byte>> mapped{file.bytes()};
  backend::cpu::release_source_pages(source, mapped);
  const size_t released = resident_file_bytes();
  INFO("RssFile " << touched << " -> " << released);
  CHECK(released + (6u << 20) <= touched);
  CHECK(sum() == expected);  // read again from the file, not zeros
}

TEST_CASE("packing a Q8_0 matrix that lies in a mapped file releases the file's pages") {
  std::mt19937 rng(5);
  model::Weights owner;
  const int64_t rows = 8192, cols = 1024;  // 8.5 MiB of Q8_0
  const model::TensorView w = make_tensor(owner, "w", DType::q8_0, rows, cols,
                                          random_values(size_t(rows * cols), 1.0f, rng));
  TempDir dir;
  {
    std::ofstream out(dir / "w.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.data), std::streamsize(w.n_bytes));
  }
  const model::MappedFile file((dir / "w.bin").string());
  model::TensorView source = w;
  source.data = file.bytes().data();
  const std::vector<std::span<const std::byte>> mapped{file.bytes()};
  const std::vector<double> all = decode_tensor(source);  // touches every page
  const size_t touched = resident_file_bytes();

  const backend::cpu::CpuMatrix m(source, nullptr, mapped);
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

TEST_CASE("F32, F16 and BF16 matrices in a mapped file are copied into the arena") {
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
    TempDir dir;
    {
      std::ofstream out(dir / "w.bin", std::ios::binary);
      out.write(reinterpret_cast<const char*>(w.data), std::streamsize(w.n_bytes));
    }
    const model::MappedFile file((dir / "w.bin").string());
    model::TensorView source = w;
    source.data = file.bytes().data();
    const std::vector<std::span<const std::byte>> mapped{file.bytes()};

    // Without an arena a matrix in a file is read where it lies.
    CHECK(backend::cpu::CpuMatrix(source, &pool, mapped).view().data == source.data);

    REQUIRE(backend::cpu::CpuMatrix::arena_bytes(source, mapped) == w.n_bytes);
    backend::cpu::MatrixArena arena(backend::cpu::CpuMatrix::arena_bytes(source, mapped));
    const std::vector<double> all = decode_tensor(source);  // touches every page
    const size_t touched = resident_file_bytes();
    const backend::cpu::CpuMatrix m(source, &pool, mapped, &arena);
    const size_t released = resident_file_bytes();
    INFO("RssFile " << touched << " -> " << released);
    CHECK(released + (6u << 20) <= touched);
    CHECK_FALSE(m.packed());
    CHECK(m.view().data != source.data);
    CHECK(reinterpret_cast<uintptr_t>(m.view().data) % 64 == 0);
    CHECK(m.view().n_bytes == w.n_bytes);
    CHECK(std::equal(w.data, w.data + w.n_bytes, m.view().data));
    std::vector<float> row(static_cast<size_t>(cols));
    m.dequantize_row(rows - 1, row.data());
    for (int64_t k = 0; k < cols; ++k) {
      CHECK(double(row[size_t(k)]) == all[size_t((rows - 1) * cols + k)]);
    }
    // The products over the copy give the bits of those over the model's own bytes.
    const std::vector<float> x = random_values(size_t(cols), 1.0f, rng);
    std::vector<float> from_copy(static_cast<size_t>(rows)), from_model(from_copy.size());
    backend::cpu::matmul(m, x.data(), 1, from_copy.data(), pool);
    backend::cpu::matmul(backend::cpu::CpuMatrix(w), x.data(), 1, from_model.data(), pool);
    CHECK(from_copy == from_model);
    CHECK(decode_tensor(source) == all);  // the file's bytes come back, not zeros
  }
}

}  // namespace parley::test

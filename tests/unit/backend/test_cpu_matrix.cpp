// The packed Q8_0 rows the CPU products read, and the release of a packed matrix's source
// pages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_matrix.h"
#include "backend/cpu/packed_arena.h"
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
      backend::cpu::PackedArena arena(backend::cpu::PackedArena::bytes_for(24) +
                                      backend::cpu::CpuMatrix::packed_bytes(w));
      if (in_arena) arena.take(24);
      const backend::cpu::CpuMatrix m(w, nullptr, {}, in_arena ? &arena : nullptr);
      INFO("cols " << cols << (in_arena ? ", in an arena" : ", owned"));
      REQUIRE(m.packed());
      CHECK(m.view().n_bytes <= backend::cpu::CpuMatrix::packed_bytes(w));
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
  // Other types are the model's bytes, not copied.
  model::Weights owner;
  const model::TensorView f =
      make_tensor(owner, "f", DType::f16, 3, 40, random_values(120, 1.0f, rng));
  const backend::cpu::CpuMatrix m(f);
  CHECK_FALSE(m.packed());
  CHECK(m.view().data == f.data);
  std::vector<float> row(40);
  m.dequantize_row(2, row.data());
  const std::vector<double> all = decode_tensor(f);
  for (size_t k = 0; k < row.size(); ++k) CHECK(double(row[k]) == all[80 + k]);
}

TEST_CASE("a packed arena hands out 64-byte aligned, zeroed, disjoint runs and refuses more") {
  backend::cpu::PackedArena arena(64 + 128 + 4096);
  CHECK(backend::cpu::PackedArena::bytes_for(1) == 64);
  CHECK(backend::cpu::PackedArena::bytes_for(128) == 128);
  std::byte* a = arena.take(1);
  std::byte* b = arena.take(100);
  std::byte* c = arena.take(4096);
  for (std::byte* p : {a, b, c}) CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  CHECK(b == a + 64);
  CHECK(c == b + 128);
  CHECK(std::all_of(c, c + 4096, [](std::byte x) { return x == std::byte{0}; }));
  std::fill(a, c + 4096, std::byte{7});  // every byte of the room is writable
  CHECK_PARLEY_ERROR(arena.take(1), Status::internal, "more than the 4288 bytes");
  // Matrices that are not Q8_0 take no room.
  model::Weights owner;
  std::mt19937 rng(3);
  const model::TensorView f =
      make_tensor(owner, "f", DType::f16, 2, 32, random_values(64, 1.0f, rng));
  CHECK(backend::cpu::CpuMatrix::packed_bytes(f) == 0);
}

TEST_CASE("a packed matrix's source pages leave the process when they are a mapped file's") {
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

}  // namespace parley::test

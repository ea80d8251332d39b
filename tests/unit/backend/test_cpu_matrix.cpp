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
#include "model/mapped_file.h"
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
  for (int64_t cols : {int64_t(32), int64_t(96), int64_t(768), int64_t(5632)}) {
    model::Weights owner;
    const int64_t rows = 5;
    const model::TensorView w = make_tensor(owner, "w", DType::q8_0, rows, cols,
                                            random_values(size_t(rows * cols), 3.0f, rng));
    const backend::cpu::CpuMatrix m(w);
    INFO("cols " << cols);
    REQUIRE(m.packed());
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
      const auto* tail = reinterpret_cast<const std::byte*>(m.q8_scales(size_t(r))) + scale_bytes;
      const auto* next = reinterpret_cast<const std::byte*>(m.q8_values(size_t(r))) + m.q8_stride();
      CHECK(std::all_of(tail, next, [](std::byte b) { return b == std::byte{0}; }));
      m.dequantize_row(r, row.data());
      for (int64_t k = 0; k < cols; ++k) CHECK(double(row[size_t(k)]) == all[size_t(r * cols + k)]);
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

// Q4_0 matrices are held in nibbles: products and row lookups give the bits that a Q8_0 matrix
// of the same codes and scales (held in bytes) gives.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_matrix.h"
#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/thread_pool.h"
#include "model/dtype.h"

namespace parley::test {
namespace {

using backend::cpu::CpuMatrix;

model::TensorView view_of(model::DType dtype, int64_t rows, int64_t cols, const void* data,
                          size_t n_bytes) {
  model::TensorView view;
  view.name.assign(1, 'w');  // (= "w" trips a GCC 12 -Wrestrict false positive)
  view.dtype = dtype;
  view.rows = rows;
  view.cols = cols;
  view.data = static_cast<const std::byte*>(data);
  view.n_bytes = n_bytes;
  return view;
}

// A Q4_0 matrix of random codes and random F16 scales, and its twin in Q8_0: the same scales,
// each code less 8 in a byte.
struct Q4Twins {
  std::vector<model::Q4_0Block> q4;
  std::vector<model::Q8Block> q8;
  model::TensorView q4_view, q8_view;

  Q4Twins(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    const size_t blocks = size_t(rows * cols) / model::kQ8BlockValues;
    q4.resize(blocks);
    q8.resize(blocks);
    for (size_t b = 0; b < blocks; ++b) {
      q4[b].d = q8[b].d = model::f32_to_f16(scale(rng));
      for (int j = 0; j < model::kQ4BlockBytes; ++j) {
        q4[b].q[j] = uint8_t(byte(rng));
        q8[b].q[j] = int8_t((q4[b].q[j] & 0x0f) - 8);
        q8[b].q[j + model::kQ4BlockBytes] = int8_t((q4[b].q[j] >> 4) - 8);
      }
    }
    q4_view = view_of(model::DType::q4_0, rows, cols, q4.data(), blocks * sizeof q4[0]);
    q8_view = view_of(model::DType::q8_0, rows, cols, q8.data(), blocks * sizeof q8[0]);
  }
};

}  // namespace

TEST_CASE("CPU matrix: Q4_0 is held in nibbles, in half the bytes of Q8_0's codes") {
  const Q4Twins w(6, 64, 1);
  CHECK(CpuMatrix(w.q4_view).nibbles());
  CHECK_FALSE(CpuMatrix(w.q8_view).nibbles());
  const Q4Twins wide(8, 4096, 2);
  // 4096 values: 2048 bytes of codes + 256 of scales vs 4096 + 256.
  CHECK(CpuMatrix(wide.q4_view).packed_row_bytes() == 2048 + 256);
  CHECK(CpuMatrix(wide.q8_view).packed_row_bytes() == 4096 + 256);
  CHECK(CpuMatrix::copy_bytes(wide.q4_view) < CpuMatrix::copy_bytes(wide.q8_view) * 6 / 10);
}

TEST_CASE("CPU matrix: products and rows of a Q4_0 matrix equal those of its Q8_0 twin, bitwise") {
  struct Shape {
    int64_t rows, cols;
    size_t n;
  };
  // Rows that fill no tile, rows of 1, 3 (odd, a line not full), 5 and 64 blocks, activation
  // rows on both sides of the register tile and of the activation cache block.
  const Shape shapes[] = {{1, 32, 1},  {5, 96, 3},   {67, 160, 5},
                          {9, 800, 33}, {130, 2048, 2}, {4, 64, 8}};
  backend::cpu::ThreadPool pool(2);
  for (const Shape& s : shapes) {
    CAPTURE(s.rows);
    CAPTURE(s.cols);
    CAPTURE(s.n);
    const Q4Twins w(s.rows, s.cols, uint32_t(s.rows * 7 + s.cols));
    const CpuMatrix nibbles(w.q4_view, &pool);
    const CpuMatrix bytes(w.q8_view, &pool);
    std::mt19937 rng(uint32_t(s.n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(s.n * size_t(s.cols));
    for (float& v : x) v = normal(rng);
    std::vector<float> y_nibbles(s.n * size_t(s.rows)), y_bytes(y_nibbles.size());
    backend::cpu::matmul(nibbles, x.data(), s.n, y_nibbles.data(), pool);
    backend::cpu::matmul(bytes, x.data(), s.n, y_bytes.data(), pool);
    CHECK(y_nibbles == y_bytes);
    std::vector<float> row_nibbles(size_t(s.cols)), row_bytes(size_t(s.cols));
    std::vector<float> row_model(size_t(s.cols));
    const size_t row_blocks = size_t(s.cols) / model::kQ8BlockValues;
    for (int64_t r = 0; r < s.rows; ++r) {
      nibbles.dequantize_row(r, row_nibbles.data());
      bytes.dequantize_row(r, row_bytes.data());
      model::dequantize(model::DType::q4_0,
                        reinterpret_cast<const std::byte*>(&w.q4[size_t(r) * row_blocks]),
                        size_t(s.cols), row_model.data());
      if (row_nibbles != row_bytes || row_nibbles != row_model) {
        CHECK(row_nibbles == row_bytes);
        CHECK(row_nibbles == row_model);
        break;
      }
    }
  }
}

}  // namespace parley::test

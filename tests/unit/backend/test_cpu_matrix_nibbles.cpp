// Q8_0 matrices whose codes fit in 4 bits (those of Q4_0 files) are held in nibbles: products
// and row lookups give the bits that the same matrix held in bytes gives.
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
using backend::cpu::Packing;

// A Q8_0 matrix of random codes in [lo, hi] and random F16 scales, in bytes of its own.
struct Q8Matrix {
  std::vector<model::Q8Block> blocks;
  model::TensorView view;

  Q8Matrix(int64_t rows, int64_t cols, int lo, int hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> code(lo, hi);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    blocks.resize(size_t(rows * cols) / model::kQ8BlockValues);
    for (model::Q8Block& b : blocks) {
      b.d = model::f32_to_f16(scale(rng));
      for (int8_t& q : b.q) q = int8_t(code(rng));
    }
    view.name.assign(1, 'w');  // (= "w" trips a GCC 12 -Wrestrict false positive)
    view.dtype = model::DType::q8_0;
    view.rows = rows;
    view.cols = cols;
    view.data = reinterpret_cast<const std::byte*>(blocks.data());
    view.n_bytes = blocks.size() * sizeof(model::Q8Block);
  }
};

}  // namespace

TEST_CASE("CPU matrix: Q8_0 codes within [-8, 7] pack into nibbles, others stay bytes") {
  Q8Matrix small(6, 64, -8, 7, 1);
  CHECK(CpuMatrix::packs_nibbles(small.view));
  CHECK_FALSE(CpuMatrix::packs_nibbles(small.view, Packing::bytes));
  CHECK(CpuMatrix::copy_bytes(small.view) < CpuMatrix::copy_bytes(small.view, Packing::bytes));
  CHECK(CpuMatrix(small.view).nibbles());
  CHECK_FALSE(CpuMatrix(small.view, nullptr, nullptr, Packing::bytes).nibbles());
  for (int8_t outside : {int8_t(8), int8_t(-9), int8_t(127)}) {
    CAPTURE(int(outside));
    Q8Matrix one_off(6, 64, -8, 7, 2);
    one_off.blocks[7].q[31] = outside;  // the last value of the last block
    CHECK_FALSE(CpuMatrix::packs_nibbles(one_off.view));
    CHECK_FALSE(CpuMatrix(one_off.view).nibbles());
  }
  Q8Matrix wide(6, 64, -127, 127, 3);
  CHECK_FALSE(CpuMatrix::packs_nibbles(wide.view));
}

TEST_CASE("CPU matrix: products and rows of a matrix in nibbles equal those in bytes, bitwise") {
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
    const Q8Matrix w(s.rows, s.cols, -8, 7, uint32_t(s.rows * 7 + s.cols));
    const CpuMatrix nibbles(w.view, &pool);
    const CpuMatrix bytes(w.view, &pool, nullptr, Packing::bytes);
    REQUIRE(nibbles.nibbles());
    std::mt19937 rng(uint32_t(s.n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(s.n * size_t(s.cols));
    for (float& v : x) v = normal(rng);
    std::vector<float> y_nibbles(s.n * size_t(s.rows)), y_bytes(y_nibbles.size());
    backend::cpu::matmul(nibbles, x.data(), s.n, y_nibbles.data(), pool);
    backend::cpu::matmul(bytes, x.data(), s.n, y_bytes.data(), pool);
    CHECK(y_nibbles == y_bytes);
    std::vector<float> row_nibbles(size_t(s.cols)), row_bytes(size_t(s.cols));
    for (int64_t r = 0; r < s.rows; ++r) {
      nibbles.dequantize_row(r, row_nibbles.data());
      bytes.dequantize_row(r, row_bytes.data());
      if (row_nibbles != row_bytes) {
        CHECK(row_nibbles == row_bytes);
        break;
      }
    }
  }
}

}  // namespace parley::test

// matmul and dequantize_row for every weight type, against a naive double product over the
// same stored (dequantized) weights and, for Q8_0, the same 16-bit activation blocks (whose
// rounding test_activation_blocks.cpp checks), on sizes that are not multiples of any SIMD
// width.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "backend/cpu/activation_blocks.h"
#include "backend/cpu/cpu_matrix.h"
#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "tiny_model.h"
#include "support/error_check.h"

namespace parley::test {
namespace {

using model::DType;

// A Q4_1 or Q5_1 product is summed as two parts, the codes' (d * code * x) and the minimums'
// (m * x): its float rounding is relative to their magnitudes, which may exceed the product's
// own when they cancel. The largest sum of |d * code * x| + |m * x| over the outputs.
double term_magnitude(const model::TensorView& w, const std::vector<double>& wd,
                      const std::vector<double>& xd, size_t n) {
  const size_t cols = size_t(w.cols);
  double largest = 0.0;
  for (size_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < w.rows; ++r) {
      const std::byte* row = w.row(r);
      const size_t block_bytes = model::row_bytes(w.dtype, 32);
      double sum = 0.0;
      for (size_t c = 0; c < cols; ++c) {
        uint16_t m_bits;  // both block types hold d, then m, at the start of each block
        std::memcpy(&m_bits, row + c / 32 * block_bytes + 2, 2);
        const double m = model::f16_to_f32(m_bits);
        const double code_part = std::fabs(wd[size_t(r) * cols + c] - m);
        sum += (code_part + std::fabs(m)) * std::fabs(xd[i * cols + c]);
      }
      largest = std::max(largest, sum);
    }
  }
  return largest;
}

// Max |y - x W^T| relative to the largest |y| of the exact product (for Q4_1 and Q5_1, to
// the largest magnitude of their two parts).
double matmul_error(DType dtype, int64_t rows, int64_t cols, size_t n, int32_t threads) {
  std::mt19937 rng(uint32_t(rows * 131 + cols * 7 + n));
  model::Weights owner;
  const model::TensorView w =
      make_tensor(owner, "w", dtype, rows, cols, random_values(size_t(rows * cols), 1.0f, rng));
  const std::vector<float> x = random_values(n * size_t(cols), 1.0f, rng);
  std::vector<float> y(n * size_t(rows), NAN);
  backend::cpu::ThreadPool pool(threads);
  backend::cpu::matmul(backend::cpu::CpuMatrix(w), x.data(), n, y.data(), pool);

  const std::vector<double> wd = decode_tensor(w);
  std::vector<double> xd(x.begin(), x.end());
  if (model::is_blocked(dtype)) {  // what the product multiplies: x as 16-bit blocks
    backend::cpu::ActivationBlocks blocks;
    backend::cpu::quantize_activations(x.data(), n, size_t(cols), blocks);
    for (size_t k = 0; k < xd.size(); ++k) xd[k] = double(blocks.q[k]) * blocks.scale[k / 32];
  }
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0.0;
      for (int64_t c = 0; c < cols; ++c)
        exact += wd[size_t(r * cols + c)] * xd[i * size_t(cols) + size_t(c)];
      worst = std::max(worst, std::fabs(exact - y[i * size_t(rows) + size_t(r)]));
      scale = std::max(scale, std::fabs(exact));
    }
  }
  if (model::has_minimums(dtype)) scale = std::max(scale, term_magnitude(w, wd, xd, n));
  return worst / scale;
}

}  // namespace

TEST_CASE("matmul matches a double product for every weight type and awkward sizes") {
  struct Shape {
    int64_t rows, cols;
    size_t n;
  };
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (Shape s : {Shape{1, 1, 1}, Shape{3, 7, 1}, Shape{17, 172, 1}, Shape{64, 172, 5},
                    Shape{33, 64, 9}, Shape{5, 4097, 3}, Shape{130, 31, 4}}) {
      const double err = matmul_error(t, s.rows, s.cols, s.n, 3);
      INFO(model::dtype_name(t) << " rows " << s.rows << " cols " << s.cols << " n " << s.n);
      CHECK(err < 1e-6);  // float accumulation over at most 4097 terms
    }
  }
  // Rows of 17 blocks: minimums are read 16 at a time, the last group short.
  for (DType t : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_1}) {
    for (Shape s : {Shape{1, 32, 1}, Shape{7, 96, 2}, Shape{64, 64, 5}, Shape{19, 4096, 6},
                    Shape{9, 160, 37}, Shape{6, 544, 3}}) {  // 37: more than one activation block
      const double err = matmul_error(t, s.rows, s.cols, s.n, 3);
      INFO(model::dtype_name(t) << " rows " << s.rows << " cols " << s.cols << " n " << s.n);
      CHECK(err < 1e-6);
    }
  }
}

TEST_CASE("matmul gives the same bits for any thread count and any batch split") {
  // n = 40 takes the batched paths (float panels; more than one Q8_0 activation block).
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1,
                  DType::q5_1}) {
    for (size_t n : {size_t(7), size_t(40)}) {
      std::mt19937 rng(5);
      model::Weights owner;
      const int64_t rows = 67, cols = model::is_blocked(t) ? 160 : 172;
      const model::TensorView w = make_tensor(owner, "w", t, rows, cols,
                                              random_values(size_t(rows * cols), 1.0f, rng));
      const std::vector<float> x = random_values(n * size_t(cols), 1.0f, rng);
      const backend::cpu::CpuMatrix m(w);
      backend::cpu::ThreadPool one(1), four(4);
      std::vector<float> a(n * size_t(rows)), b(a.size());
      backend::cpu::matmul(m, x.data(), n, a.data(), one);
      backend::cpu::matmul(m, x.data(), n, b.data(), four);
      INFO(model::dtype_name(t) << " n " << n);
      CHECK(a == b);
      for (size_t i = 0; i < n; ++i) {  // row i alone
        std::vector<float> single(static_cast<size_t>(rows));
        backend::cpu::matmul(m, &x[i * size_t(cols)], 1, single.data(), four);
        CHECK(std::equal(single.begin(), single.end(), a.begin() + int64_t(i) * rows));
      }
    }
  }
}

// Products of a few activation rows cut each matrix into one part per thread, the others
// into units of rows: matrices with fewer rows than threads, or rows not a multiple of them,
// and batches on both sides of that limit, against one thread.
TEST_CASE("fused products give the same bits for any thread count, however the rows split") {
  for (DType t : {DType::f32, DType::f16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_1}) {
    for (int64_t rows : {1, 3, 6, 67}) {
      for (size_t n : {size_t(1), size_t(8), size_t(9)}) {
        std::mt19937 rng(uint32_t(rows * 3 + int64_t(n)));
        model::Weights owner;
        const int64_t cols = 64;
        const auto weights = [&](int64_t r) {
          return backend::cpu::CpuMatrix(make_tensor(owner, "w", t, r, cols,
                                                     random_values(size_t(r * cols), 1.0f, rng)));
        };
        const backend::cpu::CpuMatrix a = weights(rows), b = weights(rows + 5);
        const backend::cpu::CpuMatrix gate = weights(rows), up = weights(rows);
        const std::vector<float> x = random_values(n * size_t(cols), 1.0f, rng);
        struct Results {
          std::vector<float> ya, yb, gated, up_out;
        };
        const auto run = [&](int32_t threads) {
          backend::cpu::ThreadPool pool(threads);
          Results r{std::vector<float>(n * size_t(rows)), std::vector<float>(n * size_t(rows + 5)),
                    std::vector<float>(n * size_t(rows)), std::vector<float>(n * size_t(rows))};
          backend::cpu::matmul_many({{&a, r.ya.data()}, {&b, r.yb.data()}}, x.data(), n, pool);
          backend::cpu::matmul_swiglu(gate, up, x.data(), n, r.gated.data(), r.up_out.data(),
                                      pool);
          return r;
        };
        const Results one = run(1);
        for (int32_t threads : {2, 3, 5}) {
          const Results many = run(threads);
          INFO(model::dtype_name(t) << " rows " << rows << " n " << n << " threads " << threads);
          CHECK(many.ya == one.ya);
          CHECK(many.yb == one.yb);
          CHECK(many.gated == one.gated);
        }
      }
    }
  }
}

TEST_CASE("packing rejects a matrix of blocks whose rows are not whole blocks") {
  for (DType t : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_1}) {
    model::Weights owner;
    model::TensorView w = make_tensor(owner, "w", t, 2, 64, std::vector<float>(128, 1.0f));
    w.cols = 48;  // a shape a reader would never accept
    CHECK_PARLEY_ERROR(backend::cpu::CpuMatrix{w}, Status::internal,
                       std::string(model::dtype_name(t)) + " matrix w", "not a multiple of 32");
  }
}

// A Q4_1 or Q5_1 row of 5 blocks reads its minimums and the activation sums 16 at a time:
// the sums past the row's end (the next activation row's) must not reach its result.
TEST_CASE("products with minimums: a NaN in one activation row leaves the others alone") {
  for (DType t : {DType::q4_1, DType::q5_1}) {
    CAPTURE(model::dtype_name(t));
    std::mt19937 rng(11);
    model::Weights owner;
    const int64_t rows = 9, cols = 160;
    const model::TensorView w =
        make_tensor(owner, "w", t, rows, cols, random_values(size_t(rows * cols), 1.0f, rng));
    std::vector<float> x = random_values(3 * size_t(cols), 1.0f, rng);
    x[size_t(cols) + 7] = NAN;  // row 1
    std::vector<float> y(3 * size_t(rows));
    backend::cpu::ThreadPool pool(2);
    backend::cpu::matmul(backend::cpu::CpuMatrix(w), x.data(), 3, y.data(), pool);
    for (int64_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      CHECK(std::isfinite(y[size_t(r)]));
      CHECK(std::isnan(y[size_t(rows + r)]));
      CHECK(std::isfinite(y[size_t(2 * rows + r)]));
    }
  }
}

TEST_CASE("dequantize_row decodes one row of each type exactly") {
  std::mt19937 rng(9);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1,
                  DType::q5_1}) {
    model::Weights owner;
    const model::TensorView w = make_tensor(owner, "e", t, 5, 64, random_values(5 * 64, 2.0f, rng));
    const std::vector<double> all = decode_tensor(w);
    std::vector<float> row(64);
    backend::cpu::dequantize_row(w, 3, row.data());
    for (size_t i = 0; i < row.size(); ++i) {
      INFO(model::dtype_name(t) << " element " << i);
      CHECK(double(row[i]) == doctest::Approx(all[3 * 64 + i]).epsilon(1e-7));
    }
  }
}

}  // namespace parley::test

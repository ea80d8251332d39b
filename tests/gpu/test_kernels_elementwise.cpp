// Element-wise kernels against the CPU backend's operations (and the model's scalar
// conversions), on awkward sizes, with guard bytes around every output.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/ops_norm_rope.h"
#include "backend/cpu/ops_swiglu.h"
#include "gpu_test_util.h"
#include "kernels/launch.h"
#include "model/dtype.h"

using namespace parley;
using namespace parley::test;

namespace {

std::vector<float> f16_to_floats(const std::vector<uint16_t>& h) {
  std::vector<float> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = model::f16_to_f32(h[i]);
  return out;
}

}  // namespace

TEST_CASE("convert: F32 -> F16 and BF16 round as the model's converters; Q8_0 -> F32 exactly") {
  PARLEY_GPU_OR_SKIP();
  for (int64_t rows : {1, 3, 17}) {
    for (int64_t cols : {32, 96, 4128}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const size_t n = size_t(rows * cols);
      auto x = random_floats(n, uint32_t(rows * 7 + cols), 3.0f);
      x[0] = 70000.0f;  // past F16's range: inf, as f32_to_f16 gives
      GuardedBuffer src(n * 4), f16(n * 2), bf16(n * 2);
      src.upload(x.data(), n * 4);
      check_cuda_ok(kernels::launch_convert({src.get(), kernels::kF32, f16.get(), kernels::kF16, rows, cols}, 0));
      check_cuda_ok(kernels::launch_convert({src.get(), kernels::kF32, bf16.get(), kernels::kBF16, rows, cols}, 0));
      const auto h = f16.read<uint16_t>(n), b = bf16.read<uint16_t>(n);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        bad += h[i] != model::f32_to_f16(x[i]);
        bad += b[i] != model::f32_to_bf16(x[i]);
      }
      CHECK(bad == 0);
      CHECK(f16.guards_intact());
      CHECK(bf16.guards_intact());

      // Q8_0 rows: blocks of an F16 scale and 32 int8.
      std::vector<uint8_t> q8(size_t(rows) * size_t(cols / 32) * 34);
      std::mt19937 rng(5);
      for (size_t blk = 0; blk < q8.size() / 34; ++blk) {
        const uint16_t d = model::f32_to_f16(0.01f * float(blk % 13 + 1));
        std::memcpy(&q8[blk * 34], &d, 2);
        for (int i = 0; i < 32; ++i) q8[blk * 34 + 2 + i] = uint8_t(int8_t(int(rng() % 255) - 127));
      }
      GuardedBuffer qsrc(q8.size()), qout(n * 4);
      qsrc.upload(q8.data(), q8.size());
      check_cuda_ok(kernels::launch_convert({qsrc.get(), kernels::kQ8_0, qout.get(), kernels::kF32, rows, cols}, 0));
      const auto got = qout.read<float>(n);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        const size_t r = i / size_t(cols), c = i % size_t(cols);
        const size_t blk = r * size_t(cols / 32) + c / 32;
        uint16_t d;
        std::memcpy(&d, &q8[blk * 34], 2);
        wrong += got[i] != model::f16_to_f32(d) * float(int8_t(q8[blk * 34 + 2 + c % 32]));
      }
      CHECK(wrong == 0);
      CHECK(qout.guards_intact());
    }
  }
}

namespace {

// Blocks of Q4_0, Q4_1 or Q5_1 with varied scales (and minimums) and random codes.
template <class Block>
std::vector<Block> nibble_blocks(size_t n_blocks, std::mt19937& rng) {
  std::vector<Block> q(n_blocks);
  for (size_t b = 0; b < n_blocks; ++b) {
    q[b].d = model::f32_to_f16(0.003f * float(b % 11 + 1));
    if constexpr (sizeof(Block) != sizeof(model::Q4_0Block)) {
      q[b].m = model::f32_to_f16(-0.02f * float(b % 7));
    }
    for (uint8_t& byte : q[b].q) byte = uint8_t(rng());
    if constexpr (sizeof(Block) == sizeof(model::Q5_1Block)) {
      for (uint8_t& byte : q[b].qh) byte = uint8_t(rng());
    }
  }
  return q;
}

template <class Block>
void check_convert_nibbles(model::DType type, kernels::ElemType src_type) {
  std::mt19937 rng(8);
  for (int64_t rows : {1, 5}) {
    for (int64_t cols : {32, 4128}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const size_t n = size_t(rows * cols), blocks = n / 32;
      const std::vector<Block> q = nibble_blocks<Block>(blocks, rng);
      std::vector<float> want(n);
      model::dequantize(type, reinterpret_cast<const std::byte*>(q.data()), n, want.data());
      GuardedBuffer src(blocks * sizeof(Block)), out(n * 4);
      src.upload(q.data(), blocks * sizeof(Block));
      check_cuda_ok(kernels::launch_convert(
          {src.get(), src_type, out.get(), kernels::kF32, rows, cols}, 0));
      const auto got = out.read<float>(n);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += got[i] != want[i];
      CHECK(wrong == 0);
      CHECK(out.guards_intact());
    }
  }
}

}  // namespace

TEST_CASE("convert: Q4_0, Q4_1 and Q5_1 -> F32 as the model decodes them, exactly") {
  PARLEY_GPU_OR_SKIP();
  check_convert_nibbles<model::Q4_0Block>(model::DType::q4_0, kernels::kQ4_0);
  check_convert_nibbles<model::Q4_1Block>(model::DType::q4_1, kernels::kQ4_1);
  check_convert_nibbles<model::Q5_1Block>(model::DType::q5_1, kernels::kQ5_1);
}

TEST_CASE("embed: rows of an F32 or F16 table, exactly") {
  PARLEY_GPU_OR_SKIP();
  const int32_t vocab = 301, dim = 67;
  const auto table = random_floats(size_t(vocab) * dim, 3);
  std::vector<uint16_t> table16(table.size());
  for (size_t i = 0; i < table.size(); ++i) table16[i] = model::f32_to_f16(table[i]);
  const std::vector<int32_t> tokens = {0, 300, 5, 5, 299, 17, 1};
  GuardedBuffer t32(table.size() * 4), t16(table.size() * 2), ids(tokens.size() * 4),
      out(tokens.size() * dim * 4);
  t32.upload(table.data(), table.size() * 4);
  t16.upload(table16.data(), table16.size() * 2);
  ids.upload(tokens.data(), tokens.size() * 4);
  const auto f16 = f16_to_floats(table16);
  for (int32_t type : {kernels::kF32, kernels::kF16}) {
    kernels::EmbedArgs a{type == kernels::kF32 ? t32.get() : t16.get(), type, ids.as<int32_t>(),
                         out.as<float>(), int32_t(tokens.size()), dim};
    check_cuda_ok(kernels::launch_embed(a, 0));
    const auto got = out.read<float>(tokens.size() * dim);
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int32_t i = 0; i < dim; ++i) {
        const size_t src = size_t(tokens[t]) * dim + size_t(i);
        REQUIRE(got[t * dim + size_t(i)] == (type == kernels::kF32 ? table[src] : f16[src]));
      }
    }
    CHECK(out.guards_intact());
  }
}

TEST_CASE("rmsnorm (with and without the residual add) matches the CPU op") {
  PARLEY_GPU_OR_SKIP();
  for (int32_t rows : {1, 3, 17}) {
    // 64 to 8192 in 16-byte pieces; 7, 4097 and 8196 (past the vector kernel) one by one.
    for (int32_t dim : {7, 64, 1000, 4096, 4097, 8192, 8196}) {
      CAPTURE(rows);
      CAPTURE(dim);
      const size_t n = size_t(rows) * dim;
      const auto x = random_floats(n, uint32_t(rows + dim), 2.0f);
      const auto r = random_floats(n, uint32_t(rows * dim), 1.0f);
      const auto w = random_floats(size_t(dim), 9, 0.5f);
      for (bool residual : {false, true}) {
        std::vector<float> sum = x, want(n);
        if (residual) {
          for (size_t i = 0; i < n; ++i) sum[i] += r[i];
        }
        for (int32_t row = 0; row < rows; ++row) {
          backend::cpu::rmsnorm(&sum[size_t(row) * dim], w.data(), size_t(dim), 1e-5f,
                                &want[size_t(row) * dim]);
        }
        GuardedBuffer dx(n * 4), dr(n * 4), dw(size_t(dim) * 4), out32(n * 4), out16(n * 2);
        dx.upload(x.data(), n * 4);
        dr.upload(r.data(), n * 4);
        dw.upload(w.data(), size_t(dim) * 4);
        kernels::RmsNormArgs a{dx.as<float>(), residual ? dr.as<float>() : nullptr, dw.as<float>(),
                               out32.get(), kernels::kF32, rows, dim, 1e-5f};
        check_cuda_ok(kernels::launch_rmsnorm(a, 0));
        CHECK(nmse(out32.read<float>(n), want) < 1e-12);
        CHECK(nmse(dx.read<float>(n), sum) == 0.0);  // x holds x + residual
        // F16 output, from x that now already holds the sum (no residual this time).
        a.residual = nullptr;
        a.out = out16.get();
        a.out_type = kernels::kF16;
        check_cuda_ok(kernels::launch_rmsnorm(a, 0));
        CHECK(nmse(f16_to_floats(out16.read<uint16_t>(n)), want) < 1e-6);
        CHECK(out32.guards_intact());
        CHECK(out16.guards_intact());
        CHECK(dx.guards_intact());
      }
    }
  }
}

TEST_CASE("swiglu matches the CPU op") {
  PARLEY_GPU_OR_SKIP();
  for (int32_t n : {1, 5, 33}) {
    for (int32_t hidden : {3, 96, 1377}) {
      const auto gu = random_floats(size_t(n) * 2 * hidden, uint32_t(n + hidden), 4.0f);
      std::vector<float> want(size_t(n) * hidden);
      for (int32_t r = 0; r < n; ++r) {
        const float* row = &gu[size_t(r) * 2 * hidden];
        backend::cpu::swiglu(row, row + hidden, size_t(hidden), &want[size_t(r) * hidden]);
      }
      GuardedBuffer in(gu.size() * 4), out(want.size() * 4);
      in.upload(gu.data(), gu.size() * 4);
      check_cuda_ok(kernels::launch_swiglu({in.as<float>(), out.get(), kernels::kF32, n, hidden}, 0));
      CHECK(nmse(out.read<float>(want.size()), want) < 1e-12);
      CHECK(out.guards_intact());
    }
  }
}

TEST_CASE("kv_block_copy copies whole blocks, aligned or not, and nothing else") {
  PARLEY_GPU_OR_SKIP();
  for (int64_t block_bytes : {int64_t(16 * 1088), int64_t(1000), int64_t(37)}) {
    const int32_t n = 3;
    std::vector<uint8_t> src(size_t(block_bytes) * n);
    std::mt19937 rng{uint32_t(block_bytes)};
    for (auto& b : src) b = uint8_t(rng());
    GuardedBuffer s(src.size()), d(src.size()), ptrs(2 * n * sizeof(void*));
    s.upload(src.data(), src.size());
    // Block i goes to slot n - 1 - i: the pointer tables decide, not the order.
    std::vector<const uint8_t*> table(2 * n);
    for (int32_t i = 0; i < n; ++i) {
      table[size_t(i)] = s.as<uint8_t>() + i * block_bytes;
      table[size_t(n + i)] = d.as<uint8_t>() + (n - 1 - i) * block_bytes;
    }
    ptrs.upload(table.data(), table.size() * sizeof(void*));
    auto** p = ptrs.as<uint8_t*>();
    check_cuda_ok(kernels::launch_kv_block_copy({p, p + n, n, block_bytes}, 0));
    const auto got = d.read<uint8_t>(src.size());
    for (int32_t i = 0; i < n; ++i) {
      CHECK(std::equal(src.begin() + i * block_bytes, src.begin() + (i + 1) * block_bytes,
                       got.begin() + (n - 1 - i) * block_bytes));
    }
    CHECK(d.guards_intact());
  }
}

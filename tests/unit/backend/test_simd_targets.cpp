// Every dispatched CPU kernel on every SIMD target this machine runs (Highway's test mock
// restricts dispatch to one target at a time), against the scalar fallback, on sizes that
// are not multiples of any vector width; and on each target, a batch gives the bits of its
// rows one at a time.
#include <doctest/doctest.h>

#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "backend/cpu/activation_blocks.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/ops_attention.h"
#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/ops_swiglu.h"
#include "backend/cpu/thread_pool.h"
#include "kernels/common/int8.cuh"
#include "kv/int8_rows.h"
#include "kv/kv_cache.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

using model::DType;

// Restricts dispatch to one target for its lifetime; back to the CPU's best after.
struct OnlyTarget {
  explicit OnlyTarget(int64_t target) { hwy::SetSupportedTargetsForTest(target); }
  ~OnlyTarget() { hwy::SetSupportedTargetsForTest(0); }
  OnlyTarget(const OnlyTarget&) = delete;
  OnlyTarget& operator=(const OnlyTarget&) = delete;
};

std::string names_of(int64_t targets) {
  std::string out;
  for (int64_t t = targets; t != 0; t &= t - 1) {
    out += std::string(out.empty() ? "" : " ") + hwy::TargetName(t & -t);
  }
  return out;
}

// Runs fn once per target with dispatch restricted to it; returns each output, scalar first.
std::vector<std::pair<int64_t, std::vector<float>>> per_target(
    const std::function<std::vector<float>()>& fn) {
  std::vector<std::pair<int64_t, std::vector<float>>> out;
  {
    OnlyTarget only(HWY_SCALAR);
    REQUIRE(backend::cpu::matmul_target() == HWY_SCALAR);
    out.emplace_back(HWY_SCALAR, fn());
  }
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (t == HWY_SCALAR) continue;
    OnlyTarget only(t);
    REQUIRE(backend::cpu::matmul_target() == t);
    out.emplace_back(t, fn());
  }
  return out;
}

// Max |a - b| over max |a|.
double relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(a[i])));
  }
  return scale > 0.0 ? worst / scale : worst;
}

void check_against_scalar(const std::string& what, double tolerance,
                          const std::function<std::vector<float>()>& fn) {
  const auto results = per_target(fn);
  for (const auto& [target, y] : results) {
    const double diff = relative_diff(results.front().second, y);
    INFO(what << " on " << hwy::TargetName(target) << ": relative diff " << diff);
    CHECK(std::none_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
    CHECK(diff <= tolerance);
  }
}

}  // namespace

TEST_CASE("AVX2, AVX-512 and the scalar fallback are compiled in; dispatch follows the mock") {
  const int64_t compiled = backend::cpu::compiled_simd_targets();
  MESSAGE("SIMD targets compiled: " << names_of(compiled));
  MESSAGE("SIMD targets this CPU runs: " << names_of(hwy::SupportedTargets() & compiled));
  MESSAGE("dispatched now: " << std::string(backend::cpu::matmul_target_name()));
  CHECK((compiled & HWY_SCALAR) != 0);
#if HWY_ARCH_X86
  CHECK((compiled & HWY_AVX2) != 0);
  CHECK((compiled & HWY_AVX3) != 0);
#endif
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    OnlyTarget only(t);
    CHECK(backend::cpu::matmul_target() == t);
    CHECK(std::string(backend::cpu::matmul_target_name()) == hwy::TargetName(t));
  }
  // Mock lifted: the best compiled target the CPU runs (better targets have lower bits).
  const int64_t usable = hwy::SupportedTargets() & compiled;
  CHECK(backend::cpu::matmul_target() == (usable & -usable));
}

TEST_CASE("matmul agrees with the scalar target on every target, every weight type and path") {
  struct Shape {
    int64_t rows, cols;
    size_t n;  // 1: decode; 3: a few rows; 9, 40: the batched paths
  };
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1,
                  DType::q5_1}) {
    // Block types' rows are whole blocks of 32; the others take any length.
    const bool blocked = model::is_blocked(t);
    const int64_t c1 = blocked ? 160 : 172, c2 = blocked ? 4096 : 4100;
    for (Shape s : {Shape{13, c1, 1}, Shape{37, c2, 1}, Shape{6, c1, 3}, Shape{21, c2, 9},
                    Shape{5, 96, 40}, Shape{1, 32, 1}}) {
      std::mt19937 rng(uint32_t(s.rows * 17 + s.cols + s.n));
      model::Weights owner;
      const model::TensorView w = make_tensor(owner, "w", t, s.rows, s.cols,
                                              random_values(size_t(s.rows * s.cols), 1.0f, rng));
      const std::vector<float> x = random_values(s.n * size_t(s.cols), 1.0f, rng);
      const backend::cpu::CpuMatrix m(w);
      backend::cpu::ThreadPool pool(2);
      const std::string what = std::string(model::dtype_name(t)) + " rows " +
                               std::to_string(s.rows) + " cols " + std::to_string(s.cols) +
                               " n " + std::to_string(s.n);
      // Float sums over up to 4100 terms in another order: a few float ulps of the largest.
      check_against_scalar(what, 1e-5, [&] {
        std::vector<float> y(s.n * size_t(s.rows), NAN);
        backend::cpu::matmul(m, x.data(), s.n, y.data(), pool);
        // On every target, each row alone gives the bits it gets in the batch.
        for (size_t i = 0; i < s.n; ++i) {
          std::vector<float> one(static_cast<size_t>(s.rows), NAN);
          backend::cpu::matmul(m, &x[i * size_t(s.cols)], 1, one.data(), pool);
          INFO(what << " row " << i << " on " << backend::cpu::matmul_target_name());
          CHECK(std::equal(one.begin(), one.end(), y.begin() + int64_t(i) * s.rows));
        }
        return y;
      });
    }
  }
}

TEST_CASE("fused gate/up with SwiGLU agrees with the scalar target on every target") {
  for (DType t : {DType::f16, DType::q8_0, DType::q5_1}) {
    std::mt19937 rng(41);
    model::Weights owner;
    const int64_t rows = 45, cols = 96;
    const auto gate = make_tensor(owner, "gate", t, rows, cols,
                                  random_values(size_t(rows * cols), 1.0f, rng));
    const auto up = make_tensor(owner, "up", t, rows, cols,
                                random_values(size_t(rows * cols), 1.0f, rng));
    const size_t n = 3;
    const std::vector<float> x = random_values(n * size_t(cols), 1.0f, rng);
    backend::cpu::ThreadPool pool(2);
    check_against_scalar(std::string("matmul_swiglu ") + std::string(model::dtype_name(t)), 1e-5,
                         [&] {
                           std::vector<float> out(n * size_t(rows)), scratch(out.size());
                           const backend::cpu::CpuMatrix g(gate), u(up);
                           backend::cpu::matmul_swiglu(g, u, x.data(), n, out.data(),
                                                       scratch.data(), pool);
                           return out;
                         });
  }
}

TEST_CASE("swiglu agrees with the scalar target on every target") {
  std::mt19937 rng(7);
  for (size_t n : {size_t(1), size_t(15), size_t(37), size_t(1000)}) {
    const std::vector<float> gate = random_values(n, 30.0f, rng);
    const std::vector<float> up = random_values(n, 2.0f, rng);
    // Exp within 1 ulp on each target, and a division: a few float ulps.
    check_against_scalar("swiglu n " + std::to_string(n), 1e-6, [&] {
      std::vector<float> out(n);
      backend::cpu::swiglu(gate.data(), up.data(), n, out.data());
      return out;
    });
  }
}

TEST_CASE("attention agrees with the scalar target on every target and every KV type") {
  struct Setup {
    int32_t n_heads, n_kv_heads, head_dim;
    uint32_t start_pos;
    size_t n_rows;
  };
  // Head sizes 6 and 24 take the narrower vectors a 16-lane target falls back to.
  for (kv::KvType type : {kv::KvType::f32, kv::KvType::f16, kv::KvType::int8}) {
    // 12/2 heads of 64 and 6/2 of 32: query groups that fill the register accumulators
    // several times over and leave some heads over; 300 positions cross many blocks.
    for (Setup s : {Setup{8, 2, 8, 3, 5}, Setup{4, 1, 64, 30, 1}, Setup{2, 2, 6, 0, 7},
                    Setup{6, 3, 24, 11, 2}, Setup{4, 4, 128, 1, 3}, Setup{12, 2, 64, 297, 3},
                    Setup{6, 2, 32, 40, 2}}) {
      std::mt19937 rng(uint32_t(s.head_dim * 7 + s.n_kv_heads));
      const kv::KvShape shape{1, s.n_kv_heads, s.head_dim};
      kv::KvCache kv(type, shape, 320);
      fill_kv_randomly(kv, 0, s.start_pos + uint32_t(s.n_rows), rng);
      const auto q = random_values(s.n_rows * size_t(s.n_heads * s.head_dim), 3.0f, rng);
      backend::cpu::ThreadPool pool(2);
      const std::string what = std::string("attention kv ") + kv::kv_type_name(type) +
                               " heads " + std::to_string(s.n_heads) + "/" +
                               std::to_string(s.n_kv_heads) + " hd " +
                               std::to_string(s.head_dim);
      check_against_scalar(what, 1e-5, [&] {
        std::vector<float> out(q.size(), NAN);
        backend::cpu::AttentionArgs args;
        args.q = q.data();
        args.out = out.data();
        args.n_rows = s.n_rows;
        args.start_pos = s.start_pos;
        args.n_heads = s.n_heads;
        backend::cpu::attention(args, kv, pool);
        return out;
      });
    }
  }
}

TEST_CASE("activation blocks: every target gives the scalar target's bits") {
  std::mt19937 rng(5);
  const size_t n = 3, cols = 160;
  std::vector<float> x = random_values(n * cols, 4.0f, rng);
  // Block 1: amax 32767 makes the factor exactly 1, so halves are ties (to even: 2, -4, 100).
  x[32] = 32767.0f;
  x[33] = 2.5f;
  x[34] = -3.5f;
  x[35] = 100.5f;
  for (size_t k = 64; k < 96; ++k) x[k] = 0.0f;                   // block 2: zeros
  x[100] = std::numeric_limits<float>::infinity();                 // block 3: not finite
  x[200] = std::numeric_limits<float>::quiet_NaN();                // block 6: not finite
  for (size_t k = 224; k < 256; ++k) x[k] *= 1e-38f;               // block 7: subnormal range
  const auto quantized = [&] {
    backend::cpu::ActivationBlocks b;
    backend::cpu::quantize_activations(x.data(), n, cols, b);
    return b;
  };
  backend::cpu::ActivationBlocks want;
  {
    OnlyTarget only(HWY_SCALAR);
    want = quantized();
  }
  CHECK(want.q[33] == 2);
  CHECK(want.q[34] == -4);
  CHECK(want.q[35] == 100);
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    OnlyTarget only(t);
    const backend::cpu::ActivationBlocks got = quantized();
    INFO("target " << hwy::TargetName(t));
    CHECK(got.q == want.q);
    REQUIRE(got.scale.size() == want.scale.size());
    for (size_t i = 0; i < want.scale.size(); ++i) {
      INFO("block " << i);
      CHECK((std::isnan(want.scale[i]) ? std::isnan(got.scale[i]) : got.scale[i] == want.scale[i]));
    }
    REQUIRE(got.sum.size() == want.sum.size());
    for (size_t i = 0; i < n * cols / 32; ++i) {  // (the padding after them is of no use)
      INFO("block " << i << " sum");
      CHECK((std::isnan(want.sum[i]) ? std::isnan(got.sum[i]) : got.sum[i] == want.sum[i]));
    }
  }
}

TEST_CASE("INT8 KV rows: every target gives the bits of the shared scalar definition") {
  std::mt19937 rng(13);
  std::vector<std::vector<float>> rows;
  for (size_t n : {8, 6, 24, 37, 64, 128}) rows.push_back(random_values(n, 3.0f, rng));
  rows.push_back({127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 126.5f, 1.5f, -127.0f});  // scale 1: ties
  rows.push_back(std::vector<float>(16, 0.0f));                                // scale 0
  rows.push_back(random_values(16, 1.0f, rng));
  rows.back()[3] = std::numeric_limits<float>::quiet_NaN();
  rows.push_back(random_values(16, 1.0f, rng));
  rows.back()[9] = -std::numeric_limits<float>::infinity();
  rows.push_back(random_values(19, 1.0f, rng));
  rows.back()[18] = std::numeric_limits<float>::infinity();  // in the scalar tail
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    OnlyTarget only(t);
    for (const auto& x : rows) {
      std::vector<int8_t> want(x.size()), got(x.size());
      const float want_scale = kernels::quantize_int8(x.data(), int(x.size()), want.data());
      const float got_scale = kv::quantize_int8_row(x.data(), x.size(), got.data());
      INFO("target " << hwy::TargetName(t) << ", row of " << x.size());
      CHECK((std::isnan(want_scale) ? std::isnan(got_scale) : got_scale == want_scale));
      CHECK(got == want);
    }
  }
}

}  // namespace parley::test

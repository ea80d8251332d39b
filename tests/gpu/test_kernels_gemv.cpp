// The decode step's single-row product against a double-precision product of the same F16
// or BF16 values, for one or several rows per warp and column counts with partial steps; its
// fused forms against the kernels they replace, and against the CPU.
#include <doctest/doctest.h>

#include <vector>

#include "backend/cpu/ops_norm_rope.h"
#include "gpu_test_util.h"
#include "kernels/common/activation.cuh"
#include "kernels/launch.h"
#include "model/dtype.h"

using namespace parley;
using namespace parley::test;

namespace {

uint16_t to_bits(float v, int32_t type) {
  return type == kernels::kF16 ? model::f32_to_f16(v) : model::f32_to_bf16(v);
}

float from_bits(uint16_t b, int32_t type) {
  return type == kernels::kF16 ? model::f16_to_f32(b) : model::bf16_to_f32(b);
}

std::vector<uint16_t> to_bits(const std::vector<float>& v, int32_t type) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_bits(v[i], type);
  return out;
}

// W x in double precision, from the values as rounded to type.
std::vector<double> product(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x, int64_t rows,
                            int32_t type) {
  const size_t cols = x.size();
  std::vector<double> y(static_cast<size_t>(rows));
  for (size_t r = 0; r < y.size(); ++r) {
    double acc = 0.0;
    for (size_t c = 0; c < cols; ++c) acc += double(from_bits(w[r * cols + c], type)) * double(from_bits(x[c], type));
    y[r] = acc;
  }
  return y;
}

}  // namespace

TEST_CASE("gemv: F16 and BF16 rows times a vector == the double-precision product") {
  PARLEY_GPU_OR_SKIP();
  for (int32_t type : {kernels::kF16, kernels::kBF16}) {
    for (int64_t rows : {1, 5, 33, 1300, 4100}) {
      for (int64_t cols : {8, 264, 2048, 4104}) {
        CAPTURE(type);
        CAPTURE(rows);
        CAPTURE(cols);
        const auto wf = random_floats(size_t(rows * cols), uint32_t(rows + cols));
        const auto xf = random_floats(size_t(cols), uint32_t(cols * 3));
        std::vector<uint16_t> wb(wf.size()), xb(xf.size());
        for (size_t i = 0; i < wf.size(); ++i) wb[i] = to_bits(wf[i], type);
        for (size_t i = 0; i < xf.size(); ++i) xb[i] = to_bits(xf[i], type);
        std::vector<float> want(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          double acc = 0.0;
          for (int64_t c = 0; c < cols; ++c) {
            acc += double(from_bits(wb[size_t(r * cols + c)], type)) * double(from_bits(xb[size_t(c)], type));
          }
          want[size_t(r)] = float(acc);
        }
        GuardedBuffer w(wb.size() * 2), x(xb.size() * 2);
        w.upload(wb.data(), wb.size() * 2);
        x.upload(xb.data(), xb.size() * 2);
        // One block of 8 warps for all rows, several rows per warp, one row per warp.
        for (int32_t min_warps : {1, 600, 1000000}) {
          CAPTURE(min_warps);
          GuardedBuffer y(size_t(rows) * 4);
          check_cuda_ok(kernels::launch_gemv({w.get(), x.get(), y.as<float>(), type, rows, cols, min_warps}, 0));
          CHECK(nmse(y.read<float>(size_t(rows)), want) < 1e-10);
          CHECK(y.guards_intact());
        }
      }
    }
  }
}

TEST_CASE("gemv: arguments it cannot serve are refused, not run") {
  PARLEY_GPU_OR_SKIP();
  GuardedBuffer w(64 * 2), x(16 * 2), y(8 * 4);
  CHECK(kernels::gemv_supports(kernels::kF16, 16, w.get(), x.get()));
  CHECK_FALSE(kernels::gemv_supports(kernels::kF32, 16, w.get(), x.get()));   // F32: cuBLAS
  CHECK_FALSE(kernels::gemv_supports(kernels::kF16, 12, w.get(), x.get()));   // not whole loads
  CHECK_FALSE(kernels::gemv_supports(kernels::kF16, 16, w.get(), x.as<uint16_t>() + 1));  // misaligned
  CHECK(kernels::launch_gemv({w.get(), x.get(), y.as<float>(), kernels::kF16, 4, 12, 1}, 0) ==
        cudaErrorInvalidValue);
  CHECK(kernels::launch_gemv({w.get(), x.get(), y.as<float>(), kernels::kF16, 0, 16, 1}, 0) ==
        cudaErrorInvalidValue);
  CHECK(y.guards_intact());
}

TEST_CASE("gemv fused forms: RMSNorm before, residual add or SwiGLU after == the kernels they replace") {
  PARLEY_GPU_OR_SKIP();
  const float eps = 1e-5f;
  for (int32_t type : {kernels::kF16, kernels::kBF16}) {
    for (int64_t rows : {2, 66, 2600}) {
      for (int64_t cols : {int64_t(8), int64_t(264), int64_t(2048), int64_t(4104), kernels::kGemvMaxNormedCols}) {
        CAPTURE(type);
        CAPTURE(rows);
        CAPTURE(cols);
        const auto wb = to_bits(random_floats(size_t(rows * cols), uint32_t(rows * 7 + cols)), type);
        const auto x = random_floats(size_t(cols), uint32_t(cols + 1), 3.0f);
        const auto norm_w = random_floats(size_t(cols), uint32_t(cols + 2), 0.5f);
        const auto y0 = random_floats(size_t(rows), uint32_t(rows + 3));
        GuardedBuffer w(wb.size() * 2), dx(x.size() * 4), dnorm(norm_w.size() * 4), xn(x.size() * 2),
            plain(size_t(rows) * 4), fused(size_t(rows) * 4), act_plain(static_cast<size_t>(rows)),
            act_fused(static_cast<size_t>(rows));
        w.upload(wb.data(), wb.size() * 2);
        dx.upload(x.data(), x.size() * 4);
        dnorm.upload(norm_w.data(), norm_w.size() * 4);

        // What the unfused decode step runs: rmsnorm into the weight type, then the product.
        kernels::RmsNormArgs norm{dx.as<float>(), nullptr, dnorm.as<float>(), xn.get(), type, 1, int32_t(cols), eps};
        check_cuda_ok(kernels::launch_rmsnorm(norm, 0));
        check_cuda_ok(kernels::launch_gemv({w.get(), xn.get(), plain.get(), type, rows, cols, 600}, 0));
        const auto want = plain.read<float>(size_t(rows));

        // Normalized input: the same sums as the two kernels (rmsnorm sums rows over 8192 in
        // another order), and the CPU's within rounding.
        kernels::GemvArgs a{w.get(), dx.get(), fused.get(), type, rows, cols, 600, kernels::kGemvRmsNormed,
                            dnorm.as<float>(), eps, kernels::kGemvStore};
        REQUIRE(kernels::gemv_supports(a));
        check_cuda_ok(kernels::launch_gemv(a, 0));
        const auto got = fused.read<float>(size_t(rows));
        CHECK(nmse(got, want) < (cols <= 8192 ? 1e-12 : 1e-6));
        std::vector<float> cpu_norm(x.size());
        backend::cpu::rmsnorm(x.data(), norm_w.data(), size_t(cols), eps, cpu_norm.data());
        const auto cpu = product(wb, to_bits(cpu_norm, type), rows, type);
        CHECK(nmse(got, std::vector<float>(cpu.begin(), cpu.end())) < 1e-6);

        // SwiGLU: rows j and rows/2 + j into one value in the weight type, as launch_swiglu
        // makes it of the stored product.
        kernels::SwigluArgs sw{fused.as<float>(), act_plain.get(), type, 1, int32_t(rows / 2)};
        check_cuda_ok(kernels::launch_swiglu(sw, 0));
        a.y = act_fused.get();
        a.output = kernels::kGemvSwiglu;
        for (int32_t min_warps : {1, 600, 1000000}) {
          CAPTURE(min_warps);
          a.min_warps = min_warps;
          check_cuda_ok(kernels::launch_gemv(a, 0));
          CHECK(act_fused.read<uint16_t>(size_t(rows / 2)) == act_plain.read<uint16_t>(size_t(rows / 2)));
        }

        // Residual add: y += W x, the sum the next rmsnorm would have formed.
        fused.upload(y0.data(), y0.size() * 4);
        a.y = fused.get();
        a.output = kernels::kGemvAdd;
        check_cuda_ok(kernels::launch_gemv(a, 0));
        std::vector<float> added(y0.size());
        for (size_t i = 0; i < added.size(); ++i) added[i] = y0[i] + got[i];
        CHECK(fused.read<float>(size_t(rows)) == added);

        std::vector<double> gated(size_t(rows / 2));
        for (size_t j = 0; j < gated.size(); ++j) {
          gated[j] = kernels::swiglu_value(float(cpu[j]), float(cpu[j + gated.size()]));
        }
        std::vector<float> got_act(gated.size());
        const auto act_bits = act_fused.read<uint16_t>(gated.size());
        for (size_t j = 0; j < gated.size(); ++j) got_act[j] = from_bits(act_bits[j], type);
        CHECK(nmse(got_act, std::vector<float>(gated.begin(), gated.end())) < (type == kernels::kF16 ? 1e-5 : 1e-4));

        CHECK(fused.guards_intact());
        CHECK(act_fused.guards_intact());
      }
    }
  }
}

TEST_CASE("gemv fused forms it cannot serve are refused") {
  PARLEY_GPU_OR_SKIP();
  GuardedBuffer w(64 * 2), x(16 * 4), norm(16 * 4), y(8 * 4);
  kernels::GemvArgs a{w.get(), x.get(), y.get(), kernels::kF16, 4, 16, 1, kernels::kGemvRmsNormed,
                      norm.as<float>(), 1e-5f, kernels::kGemvStore};
  CHECK(kernels::gemv_supports(a));
  a.norm_weight = nullptr;  // normalized without a norm weight
  CHECK_FALSE(kernels::gemv_supports(a));
  CHECK(kernels::launch_gemv(a, 0) == cudaErrorInvalidValue);
  a.norm_weight = norm.as<float>() + 1;  // misaligned
  CHECK_FALSE(kernels::gemv_supports(a));
  a.norm_weight = norm.as<float>();
  a.output = kernels::kGemvSwiglu;
  a.rows = 3;  // SwiGLU needs gate and up rows in pairs
  CHECK_FALSE(kernels::gemv_supports(a));
  CHECK(kernels::launch_gemv(a, 0) == cudaErrorInvalidValue);
  a.rows = 4;
  a.output = 7;  // no such form
  CHECK_FALSE(kernels::gemv_supports(a));
  a.output = kernels::kGemvStore;
  a.input = 5;
  CHECK_FALSE(kernels::gemv_supports(a));
  a.input = kernels::kGemvRmsNormed;
  a.cols = kernels::kGemvMaxNormedCols + 8;  // beyond the shared memory the normalized row takes
  CHECK_FALSE(kernels::gemv_supports(a));
  CHECK(y.guards_intact());
}

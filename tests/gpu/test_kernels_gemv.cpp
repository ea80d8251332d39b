// The decode step's single-row product against a double-precision product of the same F16
// or BF16 values, for one or several rows per warp and column counts with partial steps.
#include <doctest/doctest.h>

#include <vector>

#include "gpu_test_util.h"
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

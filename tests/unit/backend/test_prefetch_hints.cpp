// The decode products' prefetch distance: whole register tiles covering at least the kernel's
// minimum, and rows of no bytes (a matrix with no columns) handled without a division by zero.
#include <doctest/doctest.h>

#include <vector>

#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/prefetch_hints.h"
#include "tiny_model.h"

namespace parley::test {

using backend::cpu::prefetch_rows_ahead;

TEST_CASE("prefetch distance: the fewest whole tiles that cover the minimum") {
  // 768 Q8_0 values per packed row: 768 + 48 bytes in 832, tiles of 4 rows = 3,328 bytes.
  CHECK(prefetch_rows_ahead(4, 832, 8192) == 12);  // 3 tiles = 9,984 bytes; 2 = 6,656 < 8,192
  CHECK(prefetch_rows_ahead(4, 832, 3328) == 4);   // exactly one tile
  CHECK(prefetch_rows_ahead(4, 832, 3329) == 8);   // one byte more: two
  CHECK(prefetch_rows_ahead(4, 1536, 4096) == 4);  // 768 F16 values: one tile of 6 KiB
  CHECK(prefetch_rows_ahead(4, 5984, 8192) == 4);  // long rows: never less than one tile
  CHECK(prefetch_rows_ahead(1, 832, 8192) == 10);  // single rows: 10 x 832 = 8,320
  CHECK(prefetch_rows_ahead(4, 0, 8192) == 0);
}

TEST_CASE("a product over rows of no columns gives zeros for every weight type") {
  for (model::DType t : {model::DType::f32, model::DType::f16, model::DType::bf16,
                         model::DType::q8_0}) {
    INFO(model::dtype_name(t));
    model::Weights owner;
    model::TensorView w = make_tensor(owner, "w", t, 5, 32, std::vector<float>(5 * 32, 1.0f));
    w.cols = 0;
    const std::vector<float> x(1, 1.0f);
    std::vector<float> y(5, -1.0f);
    backend::cpu::ThreadPool pool(2);
    backend::cpu::matmul(backend::cpu::CpuMatrix(w), x.data(), 1, y.data(), pool);
    for (float v : y) CHECK(v == 0.0f);
  }
}

}  // namespace parley::test

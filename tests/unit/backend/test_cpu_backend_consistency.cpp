// Properties that must hold whatever the reference says: chunking, logits rows, threads.
#include <doctest/doctest.h>

#include <thread>

#include "kv/kv_cache.h"
#include "backend_test_util.h"

namespace parley::test {

TEST_CASE("N tokens then M more gives the logits of N + M at once") {
  for (kv::KvType kv_type : {kv::KvType::f32, kv::KvType::f16, kv::KvType::int8}) {
    for (model::DType dtype :
         {model::DType::f32, model::DType::q8_0, model::DType::q4_0, model::DType::q4_1,
          model::DType::q5_1}) {
      const TinyModel m = make_tiny_model(gqa_spec(dtype));
      backend::cpu::CpuBackend backend(m.config, m.weights, 2);
      const auto tokens = random_tokens(23, m.config.n_vocab, 5);
      kv::KvCache once(kv_type, kv_shape_of(m.config), 32);
      kv::KvCache split(kv_type, kv_shape_of(m.config), 32);
      const auto a = run_all(backend, once, tokens, m.config.n_vocab);
      const auto b = run_chunks(backend, split, tokens, {9, 14}, m.config.n_vocab);
      const auto c = run_chunks(backend, split, tokens, {1, 5, 1, 16}, m.config.n_vocab);
      INFO("kv " << kv::kv_type_name(kv_type) << ", weights " << model::dtype_name(dtype));
      // K/V are stored before attention reads them, so chunks never change a result; the
      // contract allows 1e-5 (F32) and 1e-6 (INT8); measured: bitwise equal for all types.
      const double tolerance = kv_type == kv::KvType::f32 ? 1e-5 : 1e-6;
      CHECK(max_abs_diff(a, b) <= tolerance);
      CHECK(max_abs_diff(a, c) <= tolerance);
    }
  }
}

TEST_CASE("all_logits rows equal one-token-at-a-time logits; last-only equals the last row") {
  const TinyModel m = make_tiny_model(gqa_spec(model::DType::f16));
  backend::cpu::CpuBackend backend(m.config, m.weights, 3);
  const int32_t nv = m.config.n_vocab;
  const auto tokens = random_tokens(12, nv, 6);
  kv::KvCache kv1(kv::KvType::int8, kv_shape_of(m.config), 16);
  kv::KvCache kv2(kv::KvType::int8, kv_shape_of(m.config), 16);
  const auto all = run_all(backend, kv1, tokens, nv);
  const auto decode = run_chunks(backend, kv2, tokens, std::vector<size_t>(12, 1), nv);
  CHECK(max_abs_diff(all, decode) <= 1e-6);  // measured: bitwise equal

  kv::KvCache kv3(kv::KvType::int8, kv_shape_of(m.config), 16);
  backend::Batch batch;
  batch.tokens = tokens;
  std::vector<float> last(static_cast<size_t>(nv));
  backend.forward(batch, kv3, last);
  CHECK(std::equal(last.begin(), last.end(), all.end() - nv));
}

TEST_CASE("one thread and four threads give the same logits") {
  for (model::DType dtype :
       {model::DType::f32, model::DType::bf16, model::DType::q8_0, model::DType::q4_0,
        model::DType::q4_1, model::DType::q5_1}) {
    const TinyModel m = make_tiny_model(gqa_spec(dtype));
    backend::cpu::CpuBackend one(m.config, m.weights, 1), four(m.config, m.weights, 4);
    const auto tokens = random_tokens(17, m.config.n_vocab, 7);
    kv::KvCache kv1(kv::KvType::f32, kv_shape_of(m.config), 32);
    kv::KvCache kv4(kv::KvType::f32, kv_shape_of(m.config), 32);
    const auto a = run_all(one, kv1, tokens, m.config.n_vocab);
    const auto b = run_all(four, kv4, tokens, m.config.n_vocab);
    INFO(model::dtype_name(dtype));
    CHECK(max_abs_diff(a, b) <= 1e-6);  // measured: bitwise equal (each value has one owner)
  }
}

TEST_CASE("forward() from several threads on separate caches is serialized and correct") {
  const TinyModel m = make_tiny_model(gqa_spec(model::DType::f32));
  backend::cpu::CpuBackend backend(m.config, m.weights, 2);
  const auto tokens = random_tokens(10, m.config.n_vocab, 8);
  kv::KvCache ref_kv(kv::KvType::int8, kv_shape_of(m.config), 16);
  const auto want = run_all(backend, ref_kv, tokens, m.config.n_vocab);
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      kv::KvCache kv(kv::KvType::int8, kv_shape_of(m.config), 16);
      got[t] = run_chunks(backend, kv, tokens, {3, 7}, m.config.n_vocab);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& g : got) CHECK(g == want);
}

}  // namespace parley::test

// Bad batches and bad models fail with a status and a message, before any K/V is written.
#include <doctest/doctest.h>

#include <cstring>

#include <string>

#include "kv/kv_cache.h"
#include "backend_test_util.h"
#include "common/error.h"

namespace parley::test {
namespace {

// Runs f, which must throw Error; returns it.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected parley::Error");
  return Error(Status::ok, "");
}

}  // namespace

TEST_CASE("bad batches are rejected with a status that names the problem") {
  const TinyModel m = make_tiny_model(TinySpec{});
  backend::cpu::CpuBackend backend(m.config, m.weights, 2);
  const int32_t nv = m.config.n_vocab;
  kv::KvCache kv(kv::KvType::int8, kv_shape_of(m.config), 8);
  std::vector<float> logits(static_cast<size_t>(nv));
  backend::Batch batch;

  SUBCASE("token id out of range") {
    for (int32_t bad : {nv, -1}) {
      const std::vector<int32_t> tokens = {1, bad};
      batch.tokens = tokens;
      const Error e = error_of([&] { backend.forward(batch, kv, logits); });
      CHECK(e.status() == Status::invalid_argument);
      CHECK(std::string(e.what()).find(std::to_string(bad)) != std::string::npos);
    }
  }
  SUBCASE("positions past the cache capacity") {
    const std::vector<int32_t> tokens = {1, 2, 3};
    batch.tokens = tokens;
    batch.start_pos = 6;
    const Error e = error_of([&] { backend.forward(batch, kv, logits); });
    CHECK(e.status() == Status::internal);
    CHECK(std::string(e.what()).find("capacity 8") != std::string::npos);
    batch.start_pos = 5;  // exactly fits
    CHECK_NOTHROW(backend.forward(batch, kv, logits));
  }
  SUBCASE("logits span of the wrong size") {
    const std::vector<int32_t> tokens = {1, 2};
    batch.tokens = tokens;
    batch.all_logits = true;  // needs 2 rows
    CHECK(error_of([&] { backend.forward(batch, kv, logits); }).status() == Status::internal);
  }
  SUBCASE("a KV cache of another shape") {
    kv::KvCache other(kv::KvType::int8, kv::KvShape{m.config.n_layers, 1, m.config.head_dim}, 8);
    const std::vector<int32_t> tokens = {1};
    batch.tokens = tokens;
    CHECK(error_of([&] { backend.forward(batch, other, logits); }).status() == Status::internal);
  }
  SUBCASE("empty and oversized batches") {
    CHECK(error_of([&] { backend.forward(batch, kv, logits); }).status() ==
          Status::invalid_argument);
    const std::vector<int32_t> tokens(backend.max_batch() + 1, 1);
    batch.tokens = tokens;
    kv::KvCache big(kv::KvType::int8, kv_shape_of(m.config), 1024);
    CHECK(error_of([&] { backend.forward(batch, big, logits); }).status() == Status::internal);
  }
}

TEST_CASE("a rejected batch leaves the cache's contents untouched") {
  const TinyModel m = make_tiny_model(TinySpec{});
  backend::cpu::CpuBackend backend(m.config, m.weights, 1);
  kv::KvCache kv(kv::KvType::f32, kv_shape_of(m.config), 8);
  const std::vector<int32_t> ok = {1, 2, 3}, bad = {4, 5, m.config.n_vocab};
  run_all(backend, kv, ok, m.config.n_vocab);
  // Everything the cache holds, read back through its own interface.
  const auto contents = [&] {
    std::vector<float> all, head(size_t(kv.shape().head_dim));
    for (int32_t l = 0; l < kv.shape().n_layers; ++l) {
      for (uint32_t p = 0; p < kv.capacity(); ++p) {
        for (int32_t h = 0; h < kv.shape().n_kv_heads; ++h) {
          kv.read_k(l, p, h, head.data());
          all.insert(all.end(), head.begin(), head.end());
          kv.read_v(l, p, h, head.data());
          all.insert(all.end(), head.begin(), head.end());
        }
      }
    }
    return all;
  };
  const std::vector<float> before = contents();
  backend::Batch batch;
  batch.tokens = bad;
  batch.start_pos = 3;
  std::vector<float> logits(static_cast<size_t>(m.config.n_vocab));
  CHECK_THROWS_AS(backend.forward(batch, kv, logits), Error);
  const std::vector<float> after = contents();
  CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
}

TEST_CASE("weights that do not match the config are rejected at construction") {
  TinyModel m = make_tiny_model(TinySpec{});
  model::ModelConfig c = m.config;
  c.n_kv_heads = 3;  // 4 heads are not a multiple of 3
  CHECK_THROWS_AS(backend::cpu::CpuBackend(c, m.weights, 1), Error);
  c = m.config;
  c.hidden_dim += 1;
  const Error e = error_of([&] { backend::cpu::CpuBackend(c, m.weights, 1); });
  CHECK(e.status() == Status::internal);
  CHECK(std::string(e.what()).find("w_gate") != std::string::npos);
  m.weights.layers.pop_back();
  CHECK_THROWS_AS(backend::cpu::CpuBackend(m.config, m.weights, 1), Error);
}

}  // namespace parley::test

// Bad batches and bad models fail with a status and a message, before any K/V is written.
#include <doctest/doctest.h>

#include <cstring>

#include <string>

#include "kv/kv_cache.h"
#include "backend_test_util.h"
#include "common/error.h"
#include "support/error_check.h"

namespace parley::test {

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
      CHECK_PARLEY_ERROR(backend.forward(batch, kv, logits), Status::invalid_argument,
                         "token id " + std::to_string(bad), "outside the vocabulary");
    }
  }
  SUBCASE("positions past the cache capacity") {
    const std::vector<int32_t> tokens = {1, 2, 3};
    batch.tokens = tokens;
    batch.start_pos = 6;
    CHECK_PARLEY_ERROR(backend.forward(batch, kv, logits), Status::internal, "positions [6, 9)",
                       "capacity 8");
    batch.start_pos = 5;  // exactly fits
    CHECK_NOTHROW(backend.forward(batch, kv, logits));
  }
  SUBCASE("logits span of the wrong size") {
    const std::vector<int32_t> tokens = {1, 2};
    batch.tokens = tokens;
    batch.all_logits = true;  // needs 2 rows
    CHECK_PARLEY_ERROR(backend.forward(batch, kv, logits), Status::internal,
                       "logits span holds " + std::to_string(nv) + " floats",
                       "expected 2 x " + std::to_string(nv));
  }
  SUBCASE("a KV cache of another shape") {
    kv::KvCache other(kv::KvType::int8, kv::KvShape{m.config.n_layers, 1, m.config.head_dim}, 8);
    const std::vector<int32_t> tokens = {1};
    batch.tokens = tokens;
    CHECK_PARLEY_ERROR(backend.forward(batch, other, logits), Status::internal, "kv heads 1",
                       "does not match the model");
  }
  SUBCASE("empty and oversized batches") {
    CHECK_PARLEY_ERROR(backend.forward(batch, kv, logits), Status::invalid_argument,
                       "at least one token");
    const std::vector<int32_t> tokens(backend.max_batch() + 1, 1);
    batch.tokens = tokens;
    kv::KvCache big(kv::KvType::int8, kv_shape_of(m.config), 1024);
    CHECK_PARLEY_ERROR(backend.forward(batch, big, logits), Status::internal,
                       "exceeds max_batch " + std::to_string(backend.max_batch()));
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
  CHECK_PARLEY_ERROR(backend.forward(batch, kv, logits), Status::invalid_argument,
                     "token id " + std::to_string(m.config.n_vocab));
  const std::vector<float> after = contents();
  CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
}

TEST_CASE("weights that do not match the config are rejected at construction") {
  TinyModel m = make_tiny_model(TinySpec{});
  model::ModelConfig c = m.config;
  c.n_kv_heads = 3;  // 4 heads are not a multiple of 3
  CHECK_PARLEY_ERROR(backend::cpu::CpuBackend(c, m.weights, 1), Status::internal,
                     "n_heads (4) is not a multiple of n_kv_heads (3)");
  c = m.config;
  c.hidden_dim += 1;
  CHECK_PARLEY_ERROR(backend::cpu::CpuBackend(c, m.weights, 1), Status::internal, "w_gate");
  m.weights.layers.pop_back();
  CHECK_PARLEY_ERROR(backend::cpu::CpuBackend(m.config, m.weights, 1), Status::internal,
                     "weights have " + std::to_string(m.config.n_layers - 1) + " layers");
}

}  // namespace parley::test

// forward_many: several sequences in one step compute what each computes alone, bit for bit.
#include <doctest/doctest.h>

#include <cstring>

#include "backend_test_util.h"
#include "common/error.h"

namespace parley::test {
namespace {

// A sequence with a history already in its cache and the next tokens to run.
struct Sequence {
  std::vector<int32_t> history, next;
  bool all_logits = false;
};

// Every stored K and V value of the first `positions` positions, as floats.
std::vector<float> cache_contents(const kv::KvCache& kv, uint32_t positions) {
  const kv::KvShape& s = kv.shape();
  std::vector<float> out, row(size_t(s.head_dim));
  for (int32_t l = 0; l < s.n_layers; ++l) {
    for (uint32_t p = 0; p < positions; ++p) {
      for (int32_t h = 0; h < s.n_kv_heads; ++h) {
        kv.read_k(l, p, h, row.data());
        out.insert(out.end(), row.begin(), row.end());
        kv.read_v(l, p, h, row.data());
        out.insert(out.end(), row.begin(), row.end());
      }
    }
  }
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

size_t logits_rows(const Sequence& s) { return s.all_logits ? s.next.size() : 1; }

}  // namespace

TEST_CASE("sequences run together give each one's own logits and K/V, bit for bit") {
  const std::vector<Sequence> seqs = {
      {random_tokens(5, 80, 1), random_tokens(1, 80, 2), false},   // decode at position 5
      {random_tokens(21, 80, 3), random_tokens(1, 80, 4), false},  // decode across a block
      {{}, random_tokens(7, 80, 5), true},                         // a prompt, every row
      {random_tokens(16, 80, 6), random_tokens(3, 80, 7), false},  // a chunk, last row only
  };
  for (kv::KvType kv_type : {kv::KvType::f32, kv::KvType::int8}) {
    for (model::DType dtype :
         {model::DType::f32, model::DType::q8_0, model::DType::q4_0, model::DType::q4_1,
          model::DType::q5_1}) {
      INFO("kv " << kv::kv_type_name(kv_type) << ", weights " << model::dtype_name(dtype));
      const TinyModel m = make_tiny_model(gqa_spec(dtype));
      const int32_t nv = m.config.n_vocab;
      backend::cpu::CpuBackend backend(m.config, m.weights, 2);
      CHECK(backend.max_sequences() > 1);

      std::vector<std::unique_ptr<kv::KvCache>> alone, together;
      std::vector<std::vector<float>> alone_logits, together_logits;
      std::vector<backend::SequenceStep> steps;
      for (const Sequence& s : seqs) {
        for (auto* caches : {&alone, &together}) {
          caches->push_back(std::make_unique<kv::KvCache>(kv_type, kv_shape_of(m.config), 48));
          if (!s.history.empty()) run_all(backend, *caches->back(), s.history, nv);
        }
        alone_logits.emplace_back(logits_rows(s) * size_t(nv));
        backend::Batch batch;
        batch.tokens = s.next;
        batch.start_pos = uint32_t(s.history.size());
        batch.all_logits = s.all_logits;
        backend.forward(batch, *alone.back(), alone_logits.back());
        together_logits.emplace_back(logits_rows(s) * size_t(nv), -1.0f);
        steps.push_back({batch, &together.back()->view(), together_logits.back()});
      }
      backend.forward_many(steps);
      for (size_t i = 0; i < seqs.size(); ++i) {
        INFO("sequence " << i);
        CHECK(bitwise_equal(alone_logits[i], together_logits[i]));
        const auto positions = uint32_t(seqs[i].history.size() + seqs[i].next.size());
        CHECK(bitwise_equal(cache_contents(*alone[i], positions),
                            cache_contents(*together[i], positions)));
      }
    }
  }
}

TEST_CASE("forward_many refuses a bad step with a message, like forward") {
  const TinyModel m = make_tiny_model(gqa_spec(model::DType::f32));
  backend::cpu::CpuBackend backend(m.config, m.weights, 1);
  kv::KvCache a(kv::KvType::int8, kv_shape_of(m.config), 16);
  kv::KvCache b(kv::KvType::int8, kv_shape_of(m.config), 16);
  const std::vector<int32_t> good = {1}, bad = {m.config.n_vocab};
  std::vector<float> la(size_t(m.config.n_vocab)), lb(size_t(m.config.n_vocab));
  std::vector<backend::SequenceStep> steps(2);
  steps[0] = {{good, 0, false}, &a.view(), la};
  steps[1] = {{bad, 0, false}, &b.view(), lb};
  try {
    backend.forward_many(steps);
    FAIL("a token outside the vocabulary was accepted");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find("outside the vocabulary") != std::string::npos);
  }
  CHECK_THROWS_AS(backend.forward_many({}), Error);
  steps[1] = {{good, 0, false}, nullptr, lb};
  CHECK_THROWS_AS(backend.forward_many(steps), Error);
}

}  // namespace parley::test

// A backend lets go of the weights it copied: each is given to the release once, none is read
// again, and a model released through the factory holds no weight bytes of its own.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "kv/kv_cache.h"
#include "model/model_loader.h"
#include "model/weight_release.h"
#include "support/shared_assets.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

std::vector<float> logits_of(backend::Backend& backend, const model::ModelConfig& c,
                             const std::vector<int32_t>& tokens) {
  kv::KvCache kv(kv::KvType::int8, kv_shape_of(c), 64);
  return run_all(backend, kv, tokens, c.n_vocab);
}

}  // namespace

TEST_CASE("the CPU backend releases each weight it copied once, and never reads one again") {
  for (model::DType type : {model::DType::f32, model::DType::f16, model::DType::q8_0}) {
    for (bool tied : {false, true}) {
      INFO(model::dtype_name(type) << (tied ? ", tied output" : ", untied output"));
      TinySpec spec;
      spec.dtype = type;
      spec.tied = tied;
      spec.dim = 64;  // Q8_0 rows of whole blocks
      spec.hidden_dim = 96;
      spec.n_vocab = 48;
      TinyModel m = make_tiny_model(spec);
      const std::vector<int32_t> tokens = random_tokens(9, m.config.n_vocab, 4);
      std::vector<float> want;
      {
        backend::cpu::CpuBackend plain(m.config, m.weights, 2);
        want = logits_of(plain, m.config, tokens);
      }
      // Each released view is overwritten at once: a backend that read one again would
      // compute with garbage (0xFF bytes are NaNs as F32, F16 and Q8_0 scales).
      std::map<std::string, int> released;
      const backend::WeightRelease poison = [&](const model::TensorView& v) {
        ++released[v.name];
        std::memset(const_cast<std::byte*>(v.data), 0xFF, v.n_bytes);
      };
      backend::cpu::CpuBackend backend(m.config, m.weights, 2, poison);
      // Per layer 7 matrices and 2 norms; the output norm; the output matrix (the embedding,
      // when tied). An untied embedding is read where it lies.
      CHECK(released.size() == 9 * size_t(m.config.n_layers) + 2);
      for (const auto& [name, times] : released) {
        INFO(name);
        CHECK(times == 1);
      }
      CHECK(released.count(m.weights.tok_embd.name) == (tied ? 1 : 0));
      CHECK(released.count("output") == (tied ? 0 : 1));
      const std::vector<float> got = logits_of(backend, m.config, tokens);
      CHECK(got == want);
    }
  }
}

TEST_CASE("make_backend with release_weight_bytes leaves a Hugging Face model no weight bytes") {
  PARLEY_SHARED_OR_SKIP(dir, "models/stories260k/hf");
  const auto kept = model::load_model(dir.string());
  const auto handed = model::load_model(dir.string());
  // The q/k rows un-permuted at load live in buffers the weights own.
  REQUIRE_FALSE(handed->weights.owned.empty());

  const auto keeper = backend::make_backend("cpu", *kept, 1);
  model::LoadedModel& m = *handed;
  const auto backend = backend::make_backend(
      "cpu", m, 1, [&m](const model::TensorView& v) { model::release_weight_bytes(m, v); });
  CHECK(m.weights.owned.empty());
  for (const model::TensorView* v : model::weight_views(m.weights)) {
    INFO(v->name);
    const bool untied_embedding = v == &m.weights.tok_embd && !m.weights.tied_output;
    CHECK(v->empty() == !untied_embedding);
  }
  // A model that keeps its bytes serves another backend; both compute the same.
  CHECK_FALSE(kept->weights.owned.empty());
  const auto again = backend::make_backend("cpu", *kept, 2);
  const std::vector<int32_t> tokens{1, 403, 407, 261, 378, 30, 9};
  const std::vector<float> want = logits_of(*keeper, kept->config, tokens);
  CHECK(logits_of(*backend, m.config, tokens) == want);
  CHECK(logits_of(*again, kept->config, tokens) == want);
}

}  // namespace parley::test

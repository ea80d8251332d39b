// Whole models, CUDA backend against the CPU backend: synthetic models of several shapes and
// stories260K. F32 weights on the device + F32 KV: logits within float noise and the same
// greedy tokens; F16 weights: close logits; INT8 KV: top-1 agreement along the goldens.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/error.h"
#include "golden.h"
#include "gpu_test_util.h"
#include "kv/kv_cache.h"
#include "model/model_loader.h"
#include "model/weight_release.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;

namespace {

// Logits of every position of ids: a prefill of `prefill` tokens, then one token per call
// (the captured decode step), into a fresh cache.
std::vector<float> run(backend::Backend& b, const model::ModelConfig& c, const std::vector<int32_t>& ids,
                       kv::KvType type, size_t prefill) {
  kv::KvCache cache(type, kv::KvShape{c.n_layers, c.n_kv_heads, c.head_dim}, uint32_t(ids.size()));
  std::vector<float> out(ids.size() * size_t(c.n_vocab));
  size_t pos = 0;
  while (pos < ids.size()) {
    const size_t n = pos == 0 ? std::min(prefill, ids.size()) : 1;
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(ids).subspan(pos, n);
    batch.start_pos = uint32_t(pos);
    batch.all_logits = true;
    b.forward(batch, cache, std::span<float>(out).subspan(pos * c.n_vocab, n * c.n_vocab));
    pos += n;
  }
  return out;
}

// The synthetic model of spec, written as dir/name.gguf and loaded from there.
auto synth_model(const SynthSpec& spec, const TempDir& dir, const std::string& name) {
  const auto path = dir / (name + ".gguf");
  write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);
  return model::load_model(path.string());
}

size_t argmax(const float* x, size_t n) { return size_t(std::max_element(x, x + n) - x); }

struct Agreement {
  double max_abs = 0;
  size_t top1 = 0, rows = 0;
};

Agreement compare(const std::vector<float>& a, const std::vector<float>& b, size_t vocab) {
  Agreement r;
  r.rows = a.size() / vocab;
  for (size_t i = 0; i < a.size(); ++i) r.max_abs = std::max(r.max_abs, double(std::fabs(a[i] - b[i])));
  for (size_t row = 0; row < r.rows; ++row) {
    r.top1 += argmax(&a[row * vocab], vocab) == argmax(&b[row * vocab], vocab);
  }
  return r;
}

std::vector<int32_t> random_ids(size_t n, int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = int32_t(rng() % uint32_t(vocab));
  return ids;
}

}  // namespace

TEST_CASE("synthetic models: CUDA (F32 weights) == CPU within float noise, every KV type") {
  PARLEY_GPU_OR_SKIP();
  const std::vector<SynthSpec> specs = {
      {.dim = 32, .hidden_dim = 72, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2},          // hd 8, GQA
      {.dim = 128, .hidden_dim = 200, .n_layers = 3, .n_heads = 2, .n_kv_heads = 2},        // hd 64, MHA
      {.dim = 256, .hidden_dim = 300, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .tied = true},  // hd 128, MQA
  };
  TempDir dir;
  for (size_t i = 0; i < specs.size(); ++i) {
    const SynthSpec& spec = specs[i];
    CAPTURE(spec.hd());
    const auto model = synth_model(spec, dir, "m" + std::to_string(i));
    const auto cpu = backend::make_backend("cpu", *model, 2);
    ScopedEnv f32("PARLEY_CUDA_WEIGHTS", "f32");
    const auto gpu = backend::make_backend("cuda", *model, 0);
    CHECK(gpu->name() == "cuda:0");
    const auto ids = random_ids(70, spec.n_vocab, uint32_t(i + 1));
    for (kv::KvType type : {kv::KvType::f32, kv::KvType::f16, kv::KvType::int8}) {
      CAPTURE(int(type));
      for (size_t prefill : {size_t(1), size_t(23), size_t(70)}) {
        CAPTURE(prefill);
        const auto want = run(*cpu, model->config, ids, type, prefill);
        const auto got = run(*gpu, model->config, ids, type, prefill);
        const Agreement a = compare(got, want, size_t(spec.n_vocab));
        // INT8 and F16 caches: prefill attention runs on the tensor cores, with Q, K, V and
        // the probabilities rounded to F16; F32 caches stay exact.
        CHECK(nmse(got, want) < (type == kv::KvType::f32 ? 1e-9 : 2e-5));
        if (type == kv::KvType::f32) CHECK(a.top1 == a.rows);
      }
    }
  }
}

TEST_CASE("synthetic model with F16 weights on the device: logits close to the CPU's") {
  PARLEY_GPU_OR_SKIP();
  SynthSpec spec{.dim = 128, .hidden_dim = 256, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                 .dtype = model::DType::f16};
  TempDir dir;
  const auto model = synth_model(spec, dir, "m");
  const auto cpu = backend::make_backend("cpu", *model, 2);
  ScopedEnv f16("PARLEY_CUDA_WEIGHTS", "auto");  // F16 file -> F16 resident
  const auto gpu = backend::make_backend("cuda", *model, 0);
  const auto ids = random_ids(50, spec.n_vocab, 9);
  const auto want = run(*cpu, model->config, ids, kv::KvType::f32, 17);
  const auto got = run(*gpu, model->config, ids, kv::KvType::f32, 17);
  // Activations are rounded to F16 before each product: about 1e-3 relative per step.
  CHECK(nmse(got, want) < 1e-4);
}

TEST_CASE("a CUDA backend lets go of every host weight; what it computes does not change") {
  PARLEY_GPU_OR_SKIP();
  SynthSpec spec{.dim = 128, .hidden_dim = 256, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2};
  TempDir dir;
  write_hf_dir(spec, make_synth_weights(spec), dir / "hf", "");
  write_bytes(dir / "hf" / "tokenizer.model", "x");
  const auto kept = model::load_model((dir / "hf").string());
  const auto handed = model::load_model((dir / "hf").string());
  REQUIRE_FALSE(handed->weights.owned.empty());  // the un-permuted q/k rows
  model::LoadedModel& m = *handed;
  const auto gpu = backend::make_backend(
      "cuda", m, 0, [&m](const model::TensorView& v) { model::release_weight_bytes(m, v); });
  CHECK(m.weights.owned.empty());
  for (const model::TensorView* v : model::weight_views(m.weights)) {
    INFO(v->name);
    CHECK(v->empty());  // the embedding and the norms too: the device holds them all
  }
  const auto reference = backend::make_backend("cuda", *kept, 0);
  const auto ids = random_ids(40, spec.n_vocab, 5);
  CHECK(run(*gpu, m.config, ids, kv::KvType::f32, 11) ==
        run(*reference, kept->config, ids, kv::KvType::f32, 11));
}

TEST_CASE("stories260K: CUDA logits and greedy goldens with F32 KV; INT8 top-1 along goldens") {
  PARLEY_GPU_OR_SKIP();
  PARLEY_SHARED_OR_SKIP(model_path, "models/stories260k/hf");
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  const auto model = model::load_model(model_path.string());
  const auto cpu = backend::make_backend("cpu", *model, 2);
  ScopedEnv f32("PARLEY_CUDA_WEIGHTS", "f32");
  const auto gpu = backend::make_backend("cuda", *model, 0);
  const size_t vocab = size_t(model->config.n_vocab);
  size_t int8_rows = 0, int8_agree = 0;
  for (const auto& g : read_greedy_goldens(goldens_path)) {
    CAPTURE(g.name);
    std::vector<int32_t> ids = g.prompt_ids;
    ids.insert(ids.end(), g.generated_ids.begin(), g.generated_ids.end());
    const auto want = run(*cpu, model->config, ids, kv::KvType::f32, g.prompt_ids.size());
    const auto got = run(*gpu, model->config, ids, kv::KvType::f32, g.prompt_ids.size());
    const Agreement a = compare(got, want, vocab);
    CHECK(a.max_abs < 1e-3);
    // Teacher-forced greedy: every generated token is the argmax of the row before it.
    for (size_t i = 0; i < g.generated_ids.size(); ++i) {
      const size_t row = g.prompt_ids.size() - 1 + i;
      CHECK(argmax(&got[row * vocab], vocab) == size_t(g.generated_ids[i]));
    }
    const auto want8 = run(*cpu, model->config, ids, kv::KvType::int8, g.prompt_ids.size());
    const auto got8 = run(*gpu, model->config, ids, kv::KvType::int8, g.prompt_ids.size());
    const Agreement a8 = compare(got8, want8, vocab);
    int8_rows += a8.rows;
    int8_agree += a8.top1;
  }
  MESSAGE("INT8 KV top-1 agreement CUDA vs CPU: " << int8_agree << " / " << int8_rows);
  CHECK(double(int8_agree) >= 0.99 * double(int8_rows));
}

TEST_CASE("fused decode step (PARLEY_CUDA_FUSED_DECODE): the unfused step's logits, every KV type") {
  PARLEY_GPU_OR_SKIP();
  const std::vector<SynthSpec> specs = {
      {.dim = 128, .hidden_dim = 256, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .dtype = model::DType::f16},
      {.dim = 256, .hidden_dim = 344, .n_layers = 3, .n_heads = 2, .n_kv_heads = 1, .tied = true,
       .dtype = model::DType::bf16},
      {.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 8, .n_kv_heads = 8, .dtype = model::DType::f16},
  };
  TempDir dir;
  for (size_t i = 0; i < specs.size(); ++i) {
    const SynthSpec& spec = specs[i];
    CAPTURE(i);
    const auto model = synth_model(spec, dir, "m" + std::to_string(i));
    ScopedEnv resident("PARLEY_CUDA_WEIGHTS", "auto");  // the file's F16 or BF16
    const auto plain = backend::make_backend("cuda", *model, 0);
    ScopedEnv fused_env("PARLEY_CUDA_FUSED_DECODE", "require");  // fails unless the fused kernels run
    const auto fused = backend::make_backend("cuda", *model, 0);
    const auto ids = random_ids(60, spec.n_vocab, uint32_t(i + 5));
    for (kv::KvType type : {kv::KvType::f32, kv::KvType::f16, kv::KvType::int8}) {
      CAPTURE(int(type));
      for (size_t prefill : {size_t(1), size_t(17)}) {
        CAPTURE(prefill);
        const auto want = run(*plain, model->config, ids, type, prefill);
        const auto got = run(*fused, model->config, ids, type, prefill);
        // The same sums in the same order: only the norms' block reductions could round
        // differently.
        CHECK(nmse(got, want) < 1e-10);
        const Agreement a = compare(got, want, size_t(spec.n_vocab));
        CHECK(a.top1 == a.rows);
      }
    }
  }
}

TEST_CASE("PARLEY_CUDA_FUSED_DECODE: F32 weights keep the unfused step; require refuses them; bad values refused") {
  PARLEY_GPU_OR_SKIP();
  SynthSpec spec{.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2};
  TempDir dir;
  const auto model = synth_model(spec, dir, "m");
  ScopedEnv f32("PARLEY_CUDA_WEIGHTS", "f32");
  {
    ScopedEnv on("PARLEY_CUDA_FUSED_DECODE", "1");
    const auto gpu = backend::make_backend("cuda", *model, 0);
    const auto cpu = backend::make_backend("cpu", *model, 2);
    const auto ids = random_ids(30, spec.n_vocab, 3);
    CHECK(nmse(run(*gpu, model->config, ids, kv::KvType::f32, 1), run(*cpu, model->config, ids, kv::KvType::f32, 1)) <
          1e-9);
  }
  for (const char* value : {"require", "yes"}) {
    CAPTURE(value);
    ScopedEnv env("PARLEY_CUDA_FUSED_DECODE", value);
    try {
      backend::make_backend("cuda", *model, 0);
      FAIL("created");
    } catch (const Error& e) {
      CHECK(e.status() == (std::string(value) == "require" ? Status::unsupported : Status::invalid_argument));
      const std::string message = e.what();
      CHECK(message.find(std::string(value) == "require" ? "fused decode" : "PARLEY_CUDA_FUSED_DECODE") !=
            std::string::npos);
    }
  }
}

TEST_CASE("PARLEY_CUDA_PREFILL_ATTN: every layout gives the default layout's logits; bad names refused") {
  PARLEY_GPU_OR_SKIP();
  SynthSpec spec{.dim = 256, .hidden_dim = 344, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                 .dtype = model::DType::f16};
  TempDir dir;
  const auto model = synth_model(spec, dir, "m");
  ScopedEnv resident("PARLEY_CUDA_WEIGHTS", "auto");
  const auto ids = random_ids(200, spec.n_vocab, 11);
  const auto plain = backend::make_backend("cuda", *model, 0);
  for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16}) {
    CAPTURE(int(type));
    const auto want = run(*plain, model->config, ids, type, 200);
    for (const char* name : {"w4", "w8", "w4p", "w8p"}) {
      CAPTURE(name);
      ScopedEnv layout("PARLEY_CUDA_PREFILL_ATTN", name);
      const auto gpu = backend::make_backend("cuda", *model, 0);
      CHECK(run(*gpu, model->config, ids, type, 200) == want);
    }
  }
  ScopedEnv bad("PARLEY_CUDA_PREFILL_ATTN", "w16");
  try {
    backend::make_backend("cuda", *model, 0);
    FAIL("created");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find("PARLEY_CUDA_PREFILL_ATTN") != std::string::npos);
  }
}

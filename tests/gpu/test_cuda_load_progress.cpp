// Load progress with a CUDA device: the upload reports each part of the model as it reaches
// the device (the embedding and output, then each layer), and a stop during the upload is
// CANCELLED with nothing kept, the device free for the next open.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "parley.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Reports {
  std::vector<float> seen;
  size_t stop_at = SIZE_MAX;
};

int record(float fraction, void* user) {
  auto& r = *static_cast<Reports*>(user);
  r.seen.push_back(fraction);
  return r.seen.size() - 1 == r.stop_at;
}

parley_status open_on_cuda(const std::string& model, Reports* reports, parley_engine** out) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.device = "cuda";
  if (reports) {
    o.on_load_progress = record;
    o.load_progress_user = reports;
  }
  return parley_engine_open(&o, out);
}

}  // namespace

TEST_CASE("load progress on a GPU: the upload reports each layer; a stop during it is CANCELLED") {
  PARLEY_GPU_OR_SKIP();
  SynthSpec spec{.dim = 128, .hidden_dim = 256, .n_layers = 6, .n_heads = 4, .n_kv_heads = 2};
  spec.dtype = model::DType::f16;
  TempDir dir;
  const auto path = dir / "m.gguf";
  write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);

  Reports whole;
  parley_engine* e = nullptr;
  REQUIRE(open_on_cuda(path.string(), &whole, &e) == PARLEY_OK);
  parley_engine_close(e);
  REQUIRE(whole.seen.size() >= size_t(spec.n_layers) + 3);  // 0, the embedding, layers, 1
  CHECK(whole.seen.front() == 0.0f);
  CHECK(whole.seen.back() == 1.0f);
  for (size_t i = 1; i < whole.seen.size(); ++i) CHECK(whole.seen[i] > whole.seen[i - 1]);

  Reports stopped;
  stopped.stop_at = 3;  // a layer's upload
  e = reinterpret_cast<parley_engine*>(&stopped);
  CHECK(open_on_cuda(path.string(), &stopped, &e) == PARLEY_E_CANCELLED);
  CHECK(e == nullptr);
  CHECK(std::string(parley_last_error()).find("progress callback asked to stop") !=
        std::string::npos);
  CHECK(stopped.seen.size() == 4);
  CHECK(stopped.seen.back() < 1.0f);

  REQUIRE(open_on_cuda(path.string(), nullptr, &e) == PARLEY_OK);
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  parley_generate_options g;
  parley_generate_options_init(&g);
  g.max_tokens = 4;
  g.temperature = 0;
  CHECK(parley_session_send(s, "ab", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_session_close(s);
  parley_engine_close(e);
}

// An engine's model serves its backend only: once the backend holds its copies, the model
// holds no weight bytes of its own.
#include <doctest/doctest.h>

#include "engine/engine.h"
#include "model/weights.h"
#include "support/shared_assets.h"

namespace parley::test {

TEST_CASE("an engine on the CPU keeps no second copy of a Hugging Face model's weights") {
  PARLEY_SHARED_OR_SKIP(dir, "models/stories260k/hf");
  engine::EngineOptions options;
  options.model_path = dir.string();
  options.device = "cpu";
  options.n_threads = 1;
  const engine::Engine engine(options);
  const model::Weights& w = engine.model().weights;
  // Loading un-permutes the q/k rows into buffers of its own (test_backend_weight_release.cpp).
  CHECK(w.owned.empty());
  for (const model::TensorView* v : model::weight_views(w)) {
    INFO(v->name);
    CHECK(v->empty() == (w.tied_output || v != &w.tok_embd));
  }
}

}  // namespace parley::test

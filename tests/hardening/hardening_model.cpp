#include "hardening_model.h"

#include <algorithm>
#include <memory>

#include "support/shared_assets.h"
#include "support/synth_model.h"

namespace parley::test {

const std::string& hardening_model() {
  static const auto dir = std::make_unique<TempDir>();
  static const std::string path = [] {
    SynthSpec spec;
    spec.dim = 64;
    spec.hidden_dim = 96;
    spec.n_layers = 8;
    spec.n_heads = 4;
    spec.n_kv_heads = 4;
    spec.head_dim = 32;
    spec.context_length = 1024;
    spec.seed = 8;
    auto weights = make_synth_weights(spec);
    // Ids 0..258 are <unk>, <s>, </s> and the 256 byte pieces.
    for (int32_t id = 0; id < 259; ++id) {
      std::fill_n(weights.output.begin() + size_t(id) * size_t(spec.dim), spec.dim, 0.0f);
    }
    const std::string p = (dir->path() / "hardening.gguf").string();
    write_gguf(spec, weights, make_spm_vocab(spec.n_vocab), p);
    return p;
  }();
  return path;
}

}  // namespace parley::test

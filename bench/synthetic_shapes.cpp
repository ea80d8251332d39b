#include "synthetic_shapes.h"

namespace parley::bench {

const std::vector<SyntheticShape>& synthetic_shapes() {
  static const std::vector<SyntheticShape> shapes = {
      // llama2.c stories260K: tiny, for quick runs and the bench's own test.
      {"stories260k-shape", 64, 172, 5, 8, 4, 512, 512, true},
      // llama2.c stories15M and stories110M (Llama 2's vocabulary, shared classifier).
      {"stories15m", 288, 768, 6, 6, 6, 32000, 256, true},
      {"stories110m", 768, 2048, 12, 12, 12, 32000, 1024, true},
      // TinyLlama-1.1B: GQA with 4 KV heads.
      {"tinyllama-1.1b", 2048, 5632, 22, 32, 4, 32000, 2048, false},
      // Llama 2 7B: MHA; 13.5 GB of F16 weights.
      {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, false},
  };
  return shapes;
}

std::optional<SyntheticShape> find_synthetic_shape(std::string_view name) {
  for (const SyntheticShape& s : synthetic_shapes()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

}  // namespace parley::bench

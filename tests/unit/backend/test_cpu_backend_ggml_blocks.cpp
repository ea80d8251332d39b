// A model whose GGUF file holds ggml's 4- to 6-bit blocks, run by the CPU backend, against
// the double-precision reference on the values those blocks stand for.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend_test_util.h"
#include "model/model_loader.h"
#include "reference_forward.h"
#include "support/ggml_blocks.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

namespace parley::test {
namespace {

using kv::KvType;

double max_abs_diff(const std::vector<std::vector<double>>& a,
                    const std::vector<std::vector<double>>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  return worst;
}

std::vector<std::vector<double>> reference_of(const std::filesystem::path& file,
                                              const std::vector<int32_t>& tokens) {
  const auto m = model::load_model(file.string());
  return reference_forward(m->config, m->weights, tokens, KvType::f32);
}

}  // namespace

// Q4_0, Q4_1, Q5_1 and Q5_0 (as Q5_1) are held exactly, so only the products' activation
// rounding separates the backend from the reference (as for Q8_0 files: kQ8Tolerance in
// test_cpu_backend.cpp; measured 2.5e-4 to 3.0e-4). Q4_K and Q5_K, held as Q4_1 and Q5_1, add
// F16's rounding of their sub-block scales and minimums: measured 0.012, bound 0.03. Q6_K,
// re-quantized to Q8_0, also carries up to half a Q8_0 step per weight: measured max |err|
// 0.076, about what writing the original weights as Q8_0 moves the same logits (0.074), while
// the blocks' own rounding of the original weights moves them by 0.3 (Q6_K) to 1.3 (Q4_0).
// Bound: 1.5 times the Q8_0 file's own error.
TEST_CASE("CPU backend: models in ggml block types match the reference on their values") {
  TempDir dir;
  SynthSpec spec;
  spec.dim = 256;
  spec.hidden_dim = 512;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_vocab = 320;
  const SynthWeights original = make_synth_weights(spec);
  const SynthVocab vocab = make_spm_vocab(spec.n_vocab);
  write_gguf(spec, original, vocab, dir / "original.gguf");
  const std::vector<int32_t> tokens = random_tokens(12, spec.n_vocab, 5);
  const auto reference_original = reference_of(dir / "original.gguf", tokens);
  SynthSpec q8 = spec;
  q8.dtype = model::DType::q8_0;
  write_gguf(q8, original, vocab, dir / "q8_0.gguf");
  const double q8_own = max_abs_diff(reference_of(dir / "q8_0.gguf", tokens), reference_original);
  report("Q8_0: the file's own rounding " + std::to_string(q8_own));

  for (uint32_t type : kGgmlBlockTypes) {
    const std::string name = ggml_block_type_name(type);
    CAPTURE(name);
    SynthSpec blocks = spec;
    blocks.block_type = type;
    write_gguf(blocks, original, vocab, dir / "blocks.gguf");
    write_gguf(spec, synth_block_values(blocks, original), vocab, dir / "values.gguf");
    const auto reference = reference_of(dir / "values.gguf", tokens);

    const auto m = model::load_model((dir / "blocks.gguf").string());
    backend::cpu::CpuBackend backend(m->config, m->weights, 2);
    kv::KvCache kv(KvType::f32, kv_shape_of(m->config), 64);
    const std::vector<float> got = run_all(backend, kv, tokens, m->config.n_vocab);

    const double err = max_abs_diff(reference, got);
    const double own = max_abs_diff(reference, reference_original);
    report(name + ": max |err| " + std::to_string(err) + ", the blocks' own rounding " +
           std::to_string(own));
    INFO(name << ": max |err| " << err << ", the blocks' own rounding " << own);
    CHECK(own > 0.05);  // the blocks did round the weights
    const bool exact = type == ggml_block_type::Q4_0 || type == ggml_block_type::Q5_0 ||
                       type == ggml_block_type::Q4_1 || type == ggml_block_type::Q5_1;
    const bool k_with_minimums = type == ggml_block_type::Q4_K || type == ggml_block_type::Q5_K;
    CHECK(err <= (exact ? 1e-2 : k_with_minimums ? 3e-2 : 1.5 * q8_own));
  }
}

}  // namespace parley::test

// GGUF files in ggml's 4- to 6-bit block types through the whole engine: a llama.cpp-style
// mix (Q4_K matrices, a Q6_K output matrix, an F16 matrix whose rows are not whole blocks)
// opens through the C ABI, replies, and tracks the same weights held as F32, as do Q4_0 and
// Q5_0 files; a type that cannot be loaded is refused with a status and a message that names
// it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model_runner.h"
#include "parley.h"
#include "support/c_api_sessions.h"
#include "support/ggml_blocks.h"
#include "support/gguf_builder.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;

namespace {

SynthSpec q4_k_m_like() {
  SynthSpec s;
  s.dim = 256;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.hidden_dim = 520;  // ffn_down rows are not whole super-blocks: F16, as llama.cpp falls back
  s.n_layers = 2;
  s.n_vocab = 300;
  s.context_length = 128;
  s.dtype = model::DType::f16;
  s.block_type = ggml_block_type::Q4_K;
  s.output_block_type = ggml_block_type::Q6_K;
  s.seed = 9;
  return s;
}

std::vector<int32_t> greedy_reply(const std::string& path) {
  return greedy_session_tokens(path, PARLEY_KV_DEFAULT, "ab cd", 24);
}

// spec's file (in its block types) and the F32 file of the values its blocks stand for,
// written in `dir`; the first file's greedy reply through the C ABI checked (some tokens, the
// same twice); then, below the ABI, both files' logits at the same 40 positions, compared.
LogitsComparison reply_and_compare(const SynthSpec& spec, const std::filesystem::path& dir) {
  const SynthWeights weights = make_synth_weights(spec);
  const SynthVocab vocab = make_spm_vocab(spec.n_vocab);
  write_gguf(spec, weights, vocab, dir / "blocks.gguf");
  SynthSpec f32 = spec;
  f32.dtype = model::DType::f32;
  f32.block_type = f32.output_block_type = 0;
  write_gguf(f32, synth_block_values(spec, weights), vocab, dir / "values.gguf");

  const auto reply = greedy_reply((dir / "blocks.gguf").string());
  CHECK(reply.size() > 24);
  CHECK(reply == greedy_reply((dir / "blocks.gguf").string()));  // deterministic

  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 37 + 11) % spec.n_vocab);
  const auto a = ModelRunner((dir / "blocks.gguf").string()).logits(ids, kv::KvType::f32);
  const auto b = ModelRunner((dir / "values.gguf").string()).logits(ids, kv::KvType::f32);
  return compare_logits(a, b, size_t(spec.n_vocab));
}

}  // namespace

TEST_CASE("a Q4_K_M-style GGUF replies through the C ABI and tracks its weights held as F32") {
  TempDir dir;
  // Holding Q4_K as Q4_1 (F16 scales), re-quantizing Q6_K to Q8_0 and the products'
  // activation rounding move the logits a little (test_cpu_backend_ggml_blocks.cpp bounds
  // each): measured max |diff| 0.024, the top token the same at 39 of 40 positions of this
  // random model, whose logits lie close together.
  const auto c = reply_and_compare(q4_k_m_like(), dir.path());
  INFO("max |diff| " << c.max_abs_diff << ", top-1 agreement " << c.top1_agree << "/" << c.rows);
  CHECK(c.max_abs_diff <= 0.06);
  CHECK(c.top1_agree * 100 >= c.rows * 85);
}

TEST_CASE("Q4_0 and Q5_0 GGUFs reply through the C ABI with the logits of their own values") {
  // Q4_0 is held as it is and Q5_0 as Q5_1, both exactly: only the products' activation
  // rounding separates them from their values held as F32 (measured max |diff| 3.3e-4 to
  // 3.9e-4, the top token the same at all 40 positions).
  for (uint32_t type : {ggml_block_type::Q4_0, ggml_block_type::Q5_0}) {
    CAPTURE(ggml_block_type_name(type));
    TempDir dir;
    SynthSpec spec = q4_k_m_like();
    spec.hidden_dim = 512;  // every matrix in whole blocks
    spec.block_type = type;
    spec.output_block_type = 0;
    const auto c = reply_and_compare(spec, dir.path());
    INFO("max |diff| " << c.max_abs_diff << ", top-1 agreement " << c.top1_agree << "/" << c.rows);
    CHECK(c.max_abs_diff <= 0.01);
    CHECK(c.top1_agree * 100 >= c.rows * 95);
  }
}

TEST_CASE("a GGUF tensor in a type that cannot be loaded is refused through the C ABI") {
  TempDir dir;
  GgufBuilder b;
  b.header(1, 1).kv_str("general.architecture", "llama");
  b.tensor_info("blk.0.ffn_up.weight", {256, 4}, ggml_type::Q3_K, 0)
      .pad_to(32)
      .raw(std::string(440, '\0'));
  write_bytes(dir / "q3.gguf", b.bytes());
  const std::string path = (dir / "q3.gguf").string();
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = path.c_str();
  parley_engine* e = nullptr;
  CHECK(parley_engine_open(&eo, &e) == PARLEY_E_UNSUPPORTED);
  CHECK(e == nullptr);
  const std::string message = parley_last_error();
  INFO(message);
  CHECK(message.find("blk.0.ffn_up.weight") != std::string::npos);
  CHECK(message.find("Q3_K") != std::string::npos);
  CHECK(message.find("Q4_K") != std::string::npos);  // says what would load
}

// The same random weights written as a GGUF file and as a Hugging Face directory load to the
// same network: equal logits for MHA, GQA and MQA and head sizes 8, 64 and 128, in F32, F16
// and BF16. "N tokens, then M more" equals "N + M at once". Greedy replies through the C ABI
// are the same from both files.
#include <doctest/doctest.h>

#include <fstream>

#include "model_runner.h"
#include "parley.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "text/spm_model_proto.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Shape {
  const char* name;
  int32_t dim, n_heads, n_kv_heads, head_dim;
};

const Shape kShapes[] = {
    {"MHA, head 8", 32, 4, 4, 8},
    {"GQA, head 64", 128, 2, 1, 64},  // 2 query heads share 1 KV head
    {"GQA 4:2, head 64", 256, 4, 2, 64},
    {"MQA, head 128", 256, 2, 1, 128},
    {"MQA 8:1, head 8", 64, 8, 1, 8},
};

SynthSpec spec_for(const Shape& s, model::DType dtype, uint64_t seed) {
  SynthSpec spec;
  spec.dim = s.dim;
  spec.n_heads = s.n_heads;
  spec.n_kv_heads = s.n_kv_heads;
  spec.head_dim = s.head_dim == s.dim / s.n_heads ? 0 : s.head_dim;
  spec.hidden_dim = 2 * s.dim + 8;
  spec.n_layers = 2;
  spec.n_vocab = 300;
  spec.context_length = 128;
  spec.rope_theta = 500.0f;  // a small theta makes every RoPE pair rotate visibly
  spec.dtype = dtype;
  spec.seed = seed;
  spec.tied = seed % 2 == 0;
  return spec;
}

// Writes the model both ways; returns {gguf path, hf dir}.
std::pair<std::string, std::string> write_both(const SynthSpec& spec, const TempDir& dir) {
  const auto weights = make_synth_weights(spec);
  const auto vocab = make_spm_vocab(spec.n_vocab);
  const auto gguf = dir / "model.gguf";
  write_gguf(spec, weights, vocab, gguf);

  const auto tokenizer = dir / "tokenizer.model";
  std::ofstream(tokenizer, std::ios::binary)
      << text::build_spm_model_proto(gguf_vocab_of(vocab));
  const auto hf = dir / "hf";
  HfDirOptions options;
  options.n_shards = spec.seed % 3 == 0 ? 2 : 1;
  write_hf_dir(spec, weights, hf, tokenizer, options);
  return {gguf.string(), hf.string()};
}

std::vector<int32_t> some_ids(size_t n, int32_t n_vocab) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + 11) % size_t(n_vocab)));
  return ids;
}

}  // namespace

TEST_CASE("GGUF and Hugging Face forms of the same weights give the same logits") {
  uint64_t seed = 1;
  for (const auto dtype : {model::DType::f32, model::DType::f16, model::DType::bf16}) {
    for (const auto& shape : kShapes) {
      CAPTURE(shape.name);
      CAPTURE(model::dtype_name(dtype));
      TempDir dir;
      const auto spec = spec_for(shape, dtype, seed++);
      const auto [gguf, hf] = write_both(spec, dir);
      const auto ids = some_ids(20, spec.n_vocab);
      const auto a = ModelRunner(gguf).logits(ids, kv::KvType::f32);
      const auto b = ModelRunner(hf).logits(ids, kv::KvType::f32);
      const auto c = compare_logits(a, b, size_t(spec.n_vocab));
      CHECK(c.max_abs_diff <= 1e-5);
      CHECK(c.top1_agree == c.rows);
    }
  }
}

TEST_CASE("N tokens then M more equals N + M at once") {
  for (const auto& shape : kShapes) {
    CAPTURE(shape.name);
    TempDir dir;
    const auto spec = spec_for(shape, model::DType::f32, 7);
    const auto [gguf, hf] = write_both(spec, dir);
    ModelRunner runner(gguf);
    const auto ids = some_ids(45, spec.n_vocab);
    const auto whole = runner.logits(ids, kv::KvType::f32);
    for (size_t chunk : {1, 13, 32}) {
      CAPTURE(chunk);
      const auto parts = runner.logits(ids, kv::KvType::f32, chunk);
      CHECK(compare_logits(whole, parts, size_t(spec.n_vocab)).max_abs_diff <= 1e-4);
      // With INT8 KV the cache is written before it is read, so chunking changes nothing.
      const auto q_whole = runner.logits(ids, kv::KvType::int8);
      const auto q_parts = runner.logits(ids, kv::KvType::int8, chunk);
      CHECK(compare_logits(q_whole, q_parts, size_t(spec.n_vocab)).max_abs_diff <= 1e-5);
    }
  }
}

TEST_CASE("greedy replies through the C ABI agree between the two forms") {
  TempDir dir;
  const auto spec = spec_for(kShapes[2], model::DType::f32, 3);
  const auto [gguf, hf] = write_both(spec, dir);
  auto reply_ids = [](const std::string& path) {
    return greedy_session_tokens(path, PARLEY_KV_F32, "ab cd", 30);
  };
  const auto a = reply_ids(gguf);
  CHECK(a.size() > 30);
  CHECK(a == reply_ids(hf));
}

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "model/fingerprint.h"
#include "model/model_loader.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using parley::model::load_model;
using parley::model::model_fingerprint;
using parley::test::SynthSpec;

namespace {

std::unique_ptr<parley::model::LoadedModel> synthetic(const SynthSpec& spec,
                                                      const std::filesystem::path& path) {
  parley::test::write_gguf(spec, parley::test::make_synth_weights(spec),
                           parley::test::make_spm_vocab(spec.n_vocab), path);
  return load_model(path.string());
}

// A Hugging Face directory in `tmp` whose tokenizer.model is a few bytes (hashed, not read).
std::unique_ptr<parley::model::LoadedModel> hugging_face_model(
    const SynthSpec& spec, const std::filesystem::path& tmp) {
  parley::test::write_bytes(tmp / "tok.model", "proto");
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), tmp / "hf",
                             tmp / "tok.model");
  return load_model((tmp / "hf").string());
}

uint64_t fingerprint_of(const parley::model::LoadedModel& m) {
  return model_fingerprint(m.config, m.tokenizer, m.weights);
}

}  // namespace

TEST_CASE("fingerprint: the same model written twice, anywhere, has the same fingerprint") {
  parley::test::TempDir tmp;
  const SynthSpec spec;
  const auto a = synthetic(spec, tmp / "a.gguf");
  const auto b = synthetic(spec, tmp / "b.gguf");
  CHECK(a->fingerprint == b->fingerprint);
  CHECK(a->fingerprint == fingerprint_of(*a));
}

TEST_CASE("fingerprint: hyperparameters, vocabulary and weights all count") {
  parley::test::TempDir tmp;
  SynthSpec spec;
  const auto m = synthetic(spec, tmp / "m.gguf");
  const uint64_t base = m->fingerprint;

  SynthSpec reseeded = spec;
  reseeded.seed = 2;
  CHECK(synthetic(reseeded, tmp / "s.gguf")->fingerprint != base);
  SynthSpec tied = spec;
  tied.tied = true;
  CHECK(synthetic(tied, tmp / "t.gguf")->fingerprint != base);

  auto config = m->config;
  config.rope_theta = 20000.0f;
  CHECK(model_fingerprint(config, m->tokenizer, m->weights) != base);
  config = m->config;
  config.n_kv_heads = 4;
  CHECK(model_fingerprint(config, m->tokenizer, m->weights) != base);

  auto tokenizer = m->tokenizer;
  tokenizer.vocab.tokens[300] = "changed";
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != base);
  tokenizer = m->tokenizer;
  tokenizer.vocab.scores[300] += 1.0f;
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != base);

  // A byte flipped in the sampled part of a tensor (its first and last bytes are sampled).
  auto& wv = m->weights.layers[1].wv;
  const std::byte* original = wv.data;
  for (size_t at : {size_t(0), wv.n_bytes - 1}) {
    std::vector<std::byte> copy(original, original + wv.n_bytes);
    copy[at] ^= std::byte{1};
    wv.data = copy.data();
    CHECK(fingerprint_of(*m) != base);
    wv.data = original;
  }
  CHECK(fingerprint_of(*m) == base);

  // The name and the chat template do not change what a token's KV is.
  config = m->config;
  config.name = "renamed";
  config.chat_template = "{{ anything }}";
  CHECK(model_fingerprint(config, m->tokenizer, m->weights) == base);
}

TEST_CASE("fingerprint: a sentencepiece tokenizer is hashed by its bytes") {
  parley::test::TempDir tmp;
  const auto m = hugging_face_model(SynthSpec{}, tmp.path());
  auto tokenizer = m->tokenizer;
  tokenizer.proto_bytes += "x";
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != m->fingerprint);
}

TEST_CASE("fingerprint: a sentencepiece tokenizer's added tokens count, none adds nothing") {
  parley::test::TempDir tmp;
  const SynthSpec spec;
  const auto m = hugging_face_model(spec, tmp.path());
  REQUIRE(m->tokenizer.added.tokens.empty());
  auto tokenizer = m->tokenizer;
  tokenizer.added.tokens.push_back({spec.n_vocab - 1, "<|im_end|>", true});
  const uint64_t with_marker = model_fingerprint(m->config, tokenizer, m->weights);
  CHECK(with_marker != m->fingerprint);
  tokenizer.added.tokens.back().special = false;
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != with_marker);
  tokenizer.added.tokens.back() = {spec.n_vocab - 1, "<|im_start|>", true};
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != with_marker);
  // Tokens that restate tokenizer.model's own pieces (Llama 2's <unk>, <s>, </s>) add nothing.
  tokenizer = m->tokenizer;
  tokenizer.added.n_own_pieces = 3;
  tokenizer.added.tokens = {{0, "<unk>", true}, {1, "<s>", true}, {2, "</s>", true}};
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) == m->fingerprint);
  tokenizer.added.tokens.push_back({3, "<|im_end|>", true});
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) != m->fingerprint);
  // Where the pieces are padded to is the config's vocabulary size, hashed already.
  tokenizer = m->tokenizer;
  tokenizer.added.pad_to = spec.n_vocab;
  CHECK(model_fingerprint(m->config, tokenizer, m->weights) == m->fingerprint);
}

// Tokenization through the public parley_tokenize / parley_detokenize equals sentencepiece's
// goldens exactly: the stories260K tokenizer from its GGUF metadata and from its HF directory,
// and the Llama 2 tokenizer reached through a tiny random model in an HF directory and in a
// GGUF file built from its pieces.
#include <doctest/doctest.h>

#include <sentencepiece_processor.h>

#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "parley.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley::test;

namespace {

std::vector<int32_t> tokenize(parley_engine* e, const std::string& text) {
  size_t n = 0;
  REQUIRE(parley_tokenize(e, text.c_str(), 0, nullptr, 0, &n) == PARLEY_OK);
  std::vector<int32_t> ids(n);
  REQUIRE(parley_tokenize(e, text.c_str(), 0, ids.data(), ids.size(), &n) == PARLEY_OK);
  return ids;
}

std::string detokenize(parley_engine* e, const std::vector<int32_t>& ids) {
  size_t needed = 0;
  REQUIRE(parley_detokenize(e, ids.data(), ids.size(), nullptr, 0, &needed) == PARLEY_OK);
  std::string text(needed, '\0');
  REQUIRE(parley_detokenize(e, ids.data(), ids.size(), text.data(), text.size(), &needed) == PARLEY_OK);
  text.resize(needed - 1);
  return text;
}

void check_goldens(const std::string& model_path, const std::filesystem::path& goldens) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model_path.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  const auto cases = read_tokenize_goldens(goldens);
  CHECK(cases.size() >= 20);
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(tokenize(e, c.text) == c.ids);
    CHECK(detokenize(e, c.ids) == c.decoded);
  }
  parley_engine_close(e);
}

SynthSpec tiny_spec(int32_t n_vocab) {
  SynthSpec spec;
  spec.dim = 16;
  spec.hidden_dim = 32;
  spec.n_layers = 1;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.n_vocab = n_vocab;
  return spec;
}

// The pieces of a sentencepiece model as GGUF's tokenizer.ggml.* metadata holds them.
SynthVocab vocab_of(const std::filesystem::path& tokenizer_model, bool remove_extra_whitespaces) {
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.Load(tokenizer_model.string()).ok());
  SynthVocab v;
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    v.tokens.push_back(sp.IdToPiece(id));
    v.scores.push_back(sp.GetScore(id));
    // (this sentencepiece version cannot tell user-defined pieces; Llama 2 has none)
    v.types.push_back(sp.IsUnknown(id) ? 2 : sp.IsControl(id) ? 3 : sp.IsByte(id) ? 6
                      : sp.IsUnused(id) ? 5 : 1);
  }
  v.bos_id = sp.bos_id();
  v.eos_id = sp.eos_id();
  v.unk_id = sp.unk_id();
  v.add_space_prefix = true;
  v.remove_extra_whitespaces = remove_extra_whitespaces;
  return v;
}

}  // namespace

TEST_CASE("tok512 tokenizations through the C ABI: GGUF metadata and HF tokenizer.model") {
  PARLEY_SHARED_OR_SKIP(goldens, "golden/tokenize_tok512.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SHARED_OR_SKIP(hf, "models/stories260k/hf");
  check_goldens(gguf.string(), goldens);
  check_goldens(hf.string(), goldens);
}

TEST_CASE("Llama 2 tokenizations through the C ABI: an HF directory with any tokenizer.model") {
  PARLEY_SHARED_OR_SKIP(goldens, "golden/tokenize_llama2.jsonl");
  PARLEY_SHARED_OR_SKIP(tokenizer, "tokenizers/llama2/tokenizer.model");
  TempDir dir;
  const auto spec = tiny_spec(32000);
  write_hf_dir(spec, make_synth_weights(spec), dir.path(), tokenizer);
  check_goldens(dir.path().string(), goldens);
}

TEST_CASE("Llama 2 tokenizations through the C ABI: a GGUF file carrying its pieces") {
  PARLEY_SHARED_OR_SKIP(goldens, "golden/tokenize_llama2.jsonl");
  PARLEY_SHARED_OR_SKIP(tokenizer, "tokenizers/llama2/tokenizer.model");
  TempDir dir;
  const auto spec = tiny_spec(32000);
  write_gguf(spec, make_synth_weights(spec), vocab_of(tokenizer, false), dir / "llama2-vocab.gguf");
  check_goldens((dir / "llama2-vocab.gguf").string(), goldens);
}

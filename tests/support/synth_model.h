// Synthetic Llama models for tests: random weights of any shape (MHA/GQA/MQA, any head size,
// tied or untied output), written as a GGUF file or a Hugging Face directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/tokenizer_source.h"

namespace parley::test {

struct SynthSpec {
  int32_t dim = 64;
  int32_t hidden_dim = 96;
  int32_t n_layers = 2;
  int32_t n_heads = 4;
  int32_t n_kv_heads = 2;
  int32_t head_dim = 0;  // 0 = dim / n_heads (and not written to the file)
  int32_t n_vocab = 320;
  int32_t context_length = 256;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied = false;                       // no separate output matrix
  model::DType dtype = model::DType::f32;  // matrices; norm vectors are always F32
  // GGUF only: a ggml 4- to 6-bit block type (ggml_blocks.h) the matrices are written in
  // instead of dtype where their rows are whole blocks (the others keep dtype); 0: none. The
  // output matrix takes output_block_type when that is set, as llama.cpp's mixes give it more
  // bits.
  uint32_t block_type = 0;
  uint32_t output_block_type = 0;
  uint64_t seed = 1;

  int32_t hd() const { return head_dim ? head_dim : dim / n_heads; }
};

// Row-major [rows, cols] floats (rows = out_features); wq/wk rows in the interleaved (Meta)
// RoPE order that GGUF keeps and the loader hands out.
struct SynthLayer {
  std::vector<float> attn_norm;  // [dim]
  std::vector<float> wq;         // [n_heads * hd, dim]
  std::vector<float> wk;         // [n_kv_heads * hd, dim]
  std::vector<float> wv;         // [n_kv_heads * hd, dim]
  std::vector<float> wo;         // [dim, n_heads * hd]
  std::vector<float> ffn_norm;   // [dim]
  std::vector<float> w_gate;     // [hidden_dim, dim]
  std::vector<float> w_up;       // [hidden_dim, dim]
  std::vector<float> w_down;     // [dim, hidden_dim]
};

struct SynthWeights {
  std::vector<float> tok_embd;  // [n_vocab, dim]
  std::vector<SynthLayer> layers;
  std::vector<float> output_norm;  // [dim]
  std::vector<float> output;       // [n_vocab, dim]; empty when spec.tied
};

// Deterministic in spec.seed. Matrices ~ N(0, 1/cols), so activations and logits stay O(1);
// norm weights ~ 1 + N(0, 0.1^2).
SynthWeights make_synth_weights(const SynthSpec& spec);

// The type a matrix with `cols` columns is written in: spec.dtype, except that the block
// types fall back to F16 when cols is not a multiple of 32 (as llama.cpp's tools do).
model::DType synth_matrix_dtype(const SynthSpec& spec, int64_t cols);

// The block type a matrix with `cols` columns is written in (the output matrix's when
// `output`), or 0 when it is written in synth_matrix_dtype().
uint32_t synth_matrix_block_type(const SynthSpec& spec, int64_t cols, bool output);

// `weights` with every matrix that spec writes in a block type replaced by the values its
// blocks stand for: what a loader that converts blocks exactly would hand back.
SynthWeights synth_block_values(const SynthSpec& spec, const SynthWeights& weights);

// The tokenizer metadata of a GGUF file (tokenizer.ggml.*).
struct SynthVocab {
  std::string model = "llama";
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // 1 normal, 2 unknown, 3 control, 6 byte
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t pad_id = -1;  // -1: key not written
  bool add_bos = true;
  std::optional<bool> add_space_prefix;          // nullopt: key not written
  std::optional<bool> remove_extra_whitespaces;  // nullopt: key not written
  std::string chat_template;                     // "": key not written
  std::optional<int32_t> eot_id;                 // tokenizer.ggml.eot_token_id; nullopt: none
  std::optional<int32_t> eom_id;                 // tokenizer.ggml.eom_token_id; nullopt: none
};

// A minimal valid sentencepiece-style vocabulary of n_vocab (>= 260) pieces: <unk> (type 2),
// <s>, </s> (type 3), <0x00>..<0xFF> (type 6), then normal pieces "▁a", "a", "▁b", ...
SynthVocab make_spm_vocab(int32_t n_vocab);

// The same vocabulary as the tokenizer takes it (for build_spm_model_proto: a tokenizer.model).
model::GgufVocab gguf_vocab_of(const SynthVocab& vocab);

// A GGUF v3 file as llama.cpp's converter lays it out (alignment 32, UINT32 integers).
void write_gguf(const SynthSpec& spec, const SynthWeights& weights, const SynthVocab& vocab,
                const std::filesystem::path& path);

// A GGUF file of spec's random model with make_spm_vocab's vocabulary, written on the first
// call for `name` into a folder removed at exit; later calls for that name return its path.
const std::string& synthetic_gguf_once(const std::string& name, const SynthSpec& spec);

struct HfDirOptions {
  int n_shards = 1;           // > 1: model-0000i-of-0000n.safetensors + index
  std::string chat_template{};  // written to tokenizer_config.json when not empty
  // A JSON merge patch (RFC 7396) applied to config.json: {"eos_token_id": [2, 7]} replaces
  // a key, null removes one. "": none.
  std::string config_patch{};
  std::string generation_config{};  // generation_config.json's text, written when not empty
};

// config.json, tokenizer_config.json, model.safetensors (or shards + index) with q/k rows
// permuted to Hugging Face's rotate-half order, and a copy of `tokenizer_model` as
// tokenizer.model (none when the path is empty). spec.dtype must be F32, F16 or BF16.
void write_hf_dir(const SynthSpec& spec, const SynthWeights& weights,
                  const std::filesystem::path& dir, const std::filesystem::path& tokenizer_model,
                  const HfDirOptions& options = {});

// Interleaved (Meta) rows -> Hugging Face rotate-half rows, for `heads` heads of `head_dim`.
std::vector<float> permute_to_hf(const std::vector<float>& rows, int32_t heads, int32_t head_dim,
                                 int64_t cols);

}  // namespace parley::test

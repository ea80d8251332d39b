#include "support/synth_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "support/ggml_blocks.h"
#include "support/gguf_builder.h"
#include "support/safetensors_builder.h"
#include "support/tensor_codec.h"

namespace parley::test {

using model::DType;

namespace {

// Box-Muller over mt19937_64: the same numbers with every standard library.
class Normal {
 public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  float operator()() {
    const double u1 = (double(rng_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = double(rng_() >> 11) * 0x1.0p-53;
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<float> matrix(Normal& n, int64_t rows, int64_t cols) {
  std::vector<float> m(size_t(rows * cols));
  const float scale = 1.0f / std::sqrt(float(cols));
  for (float& x : m) x = n() * scale;
  return m;
}

std::vector<float> norm(Normal& n, int64_t dim) {
  std::vector<float> v(static_cast<size_t>(dim));
  for (float& x : v) x = 1.0f + 0.1f * n();
  return v;
}

uint32_t ggml_id(DType t) {
  switch (t) {
    case DType::f32:
      return ggml_type::F32;
    case DType::f16:
      return ggml_type::F16;
    case DType::bf16:
      return ggml_type::BF16;
    case DType::q8_0:
      return ggml_type::Q8_0;
    case DType::q4_0:
      return ggml_type::Q4_0;
    case DType::q4_1:
      return ggml_type::Q4_1;
    case DType::q5_1:
      return ggml_type::Q5_1;
  }
  return 0;
}

std::string safetensors_name(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::q8_0:
    case DType::q4_0:
    case DType::q4_1:
    case DType::q5_1:
      break;
  }
  throw std::invalid_argument("safetensors has no ggml block types");
}

// One tensor to write: its name, [rows, cols] (rows = 0 for a vector), values and type.
struct OutTensor {
  std::string name;
  int64_t rows, cols;
  const std::vector<float>* values;
  DType dtype;
  uint32_t block_type = 0;  // a ggml block type written instead of dtype; 0: none
};

std::string base26(int k) {
  std::string s;
  do {
    s.insert(s.begin(), char('a' + k % 26));
    k = k / 26 - 1;
  } while (k >= 0);
  return s;
}

}  // namespace

SynthWeights make_synth_weights(const SynthSpec& s) {
  Normal n(s.seed);
  const int64_t q_rows = int64_t(s.n_heads) * s.hd(), kv_rows = int64_t(s.n_kv_heads) * s.hd();
  SynthWeights w;
  w.tok_embd = matrix(n, s.n_vocab, s.dim);
  for (int32_t l = 0; l < s.n_layers; ++l) {
    SynthLayer L;
    L.attn_norm = norm(n, s.dim);
    L.wq = matrix(n, q_rows, s.dim);
    L.wk = matrix(n, kv_rows, s.dim);
    L.wv = matrix(n, kv_rows, s.dim);
    L.wo = matrix(n, s.dim, q_rows);
    L.ffn_norm = norm(n, s.dim);
    L.w_gate = matrix(n, s.hidden_dim, s.dim);
    L.w_up = matrix(n, s.hidden_dim, s.dim);
    L.w_down = matrix(n, s.dim, s.hidden_dim);
    w.layers.push_back(std::move(L));
  }
  w.output_norm = norm(n, s.dim);
  if (!s.tied) w.output = matrix(n, s.n_vocab, s.dim);
  return w;
}

DType synth_matrix_dtype(const SynthSpec& spec, int64_t cols) {
  if (model::is_blocked(spec.dtype) && cols % model::kQ8BlockValues != 0) return DType::f16;
  return spec.dtype;
}

uint32_t synth_matrix_block_type(const SynthSpec& spec, int64_t cols, bool output) {
  const uint32_t type = output && spec.output_block_type ? spec.output_block_type
                                                         : spec.block_type;
  if (type == 0 || cols % int64_t(ggml_block_values(type)) != 0) return 0;
  return type;
}

SynthWeights synth_block_values(const SynthSpec& s, const SynthWeights& w) {
  SynthWeights out = w;
  auto replace = [&](std::vector<float>& v, int64_t cols, bool output) {
    const uint32_t type = synth_matrix_block_type(s, cols, output);
    if (type) v = encode_ggml_blocks(type, v).values;
  };
  const int64_t q_cols = int64_t(s.n_heads) * s.hd();
  replace(out.tok_embd, s.dim, false);
  for (SynthLayer& L : out.layers) {
    for (auto* m : {&L.wq, &L.wk, &L.wv, &L.w_gate, &L.w_up}) replace(*m, s.dim, false);
    replace(L.wo, q_cols, false);
    replace(L.w_down, s.hidden_dim, false);
  }
  if (!s.tied) replace(out.output, s.dim, true);
  return out;
}

model::GgufVocab gguf_vocab_of(const SynthVocab& vocab) {
  model::GgufVocab v;
  v.model = vocab.model;
  v.tokens = vocab.tokens;
  v.scores = vocab.scores;
  v.token_types = vocab.types;
  v.bos_id = vocab.bos_id;
  v.eos_id = vocab.eos_id;
  v.unk_id = vocab.unk_id;
  return v;
}

SynthVocab make_spm_vocab(int32_t n_vocab) {
  if (n_vocab < 260) throw std::invalid_argument("an SPM vocabulary needs at least 260 pieces");
  SynthVocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.emplace_back(buf);
    v.types.push_back(6);
  }
  for (int k = 0; int32_t(v.tokens.size()) < n_vocab; ++k) {
    const std::string piece = base26(k / 2);
    v.tokens.push_back(k % 2 == 0 ? "\xE2\x96\x81" + piece : piece);  // U+2581 marks a word start
    v.types.push_back(1);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = 259; i < v.scores.size(); ++i) v.scores[i] = -float(i - 259);
  return v;
}

namespace {

std::vector<OutTensor> gguf_tensors(const SynthSpec& s, const SynthWeights& w) {
  const int64_t q_rows = int64_t(s.n_heads) * s.hd(), kv_rows = int64_t(s.n_kv_heads) * s.hd();
  auto mat = [&](std::string name, int64_t rows, int64_t cols, const std::vector<float>& v) {
    const bool output = name == "output.weight";
    return OutTensor{std::move(name), rows, cols, &v, synth_matrix_dtype(s, cols),
                     synth_matrix_block_type(s, cols, output)};
  };
  auto vec = [&](std::string name, const std::vector<float>& v) {
    return OutTensor{std::move(name), 0, int64_t(v.size()), &v, DType::f32};
  };
  std::vector<OutTensor> out;
  out.push_back(mat("token_embd.weight", s.n_vocab, s.dim, w.tok_embd));
  out.push_back(vec("output_norm.weight", w.output_norm));
  if (!s.tied) out.push_back(mat("output.weight", s.n_vocab, s.dim, w.output));
  for (int32_t l = 0; l < s.n_layers; ++l) {
    const SynthLayer& L = w.layers[size_t(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    out.push_back(vec(p + "attn_norm.weight", L.attn_norm));
    out.push_back(mat(p + "attn_q.weight", q_rows, s.dim, L.wq));
    out.push_back(mat(p + "attn_k.weight", kv_rows, s.dim, L.wk));
    out.push_back(mat(p + "attn_v.weight", kv_rows, s.dim, L.wv));
    out.push_back(mat(p + "attn_output.weight", s.dim, q_rows, L.wo));
    out.push_back(vec(p + "ffn_norm.weight", L.ffn_norm));
    out.push_back(mat(p + "ffn_gate.weight", s.hidden_dim, s.dim, L.w_gate));
    out.push_back(mat(p + "ffn_up.weight", s.hidden_dim, s.dim, L.w_up));
    out.push_back(mat(p + "ffn_down.weight", s.dim, s.hidden_dim, L.w_down));
  }
  return out;
}

}  // namespace

void write_gguf(const SynthSpec& s, const SynthWeights& w, const SynthVocab& v,
                const std::filesystem::path& path) {
  constexpr size_t kAlignment = 32;
  GgufBuilder kv;
  uint64_t n_kv = 0;
  auto count = [&](GgufBuilder&) { ++n_kv; };
  count(kv.kv_str("general.architecture", "llama"));
  count(kv.kv_str("general.name", "synthetic"));
  count(kv.kv_u32("general.alignment", kAlignment));
  count(kv.kv_u32("llama.vocab_size", uint32_t(s.n_vocab)));
  count(kv.kv_u32("llama.context_length", uint32_t(s.context_length)));
  count(kv.kv_u32("llama.embedding_length", uint32_t(s.dim)));
  count(kv.kv_u32("llama.block_count", uint32_t(s.n_layers)));
  count(kv.kv_u32("llama.feed_forward_length", uint32_t(s.hidden_dim)));
  count(kv.kv_u32("llama.rope.dimension_count", uint32_t(s.hd())));
  count(kv.kv_u32("llama.attention.head_count", uint32_t(s.n_heads)));
  count(kv.kv_u32("llama.attention.head_count_kv", uint32_t(s.n_kv_heads)));
  if (s.head_dim) count(kv.kv_u32("llama.attention.key_length", uint32_t(s.head_dim)));
  count(kv.kv_f32("llama.attention.layer_norm_rms_epsilon", s.rms_eps));
  count(kv.kv_f32("llama.rope.freq_base", s.rope_theta));
  count(kv.kv_str("tokenizer.ggml.model", v.model));
  count(kv.kv_strings("tokenizer.ggml.tokens", v.tokens));
  if (!v.scores.empty()) count(kv.kv_f32s("tokenizer.ggml.scores", v.scores));
  if (!v.types.empty()) count(kv.kv_i32s("tokenizer.ggml.token_type", v.types));
  count(kv.kv_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id)));
  count(kv.kv_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id)));
  count(kv.kv_u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk_id)));
  if (v.pad_id >= 0) count(kv.kv_u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad_id)));
  count(kv.kv_bool("tokenizer.ggml.add_bos_token", v.add_bos));
  if (v.add_space_prefix) count(kv.kv_bool("tokenizer.ggml.add_space_prefix", *v.add_space_prefix));
  if (v.remove_extra_whitespaces) {
    count(kv.kv_bool("tokenizer.ggml.remove_extra_whitespaces", *v.remove_extra_whitespaces));
  }
  if (!v.chat_template.empty()) count(kv.kv_str("tokenizer.chat_template", v.chat_template));
  if (v.eot_id) count(kv.kv_u32("tokenizer.ggml.eot_token_id", uint32_t(*v.eot_id)));
  if (v.eom_id) count(kv.kv_u32("tokenizer.ggml.eom_token_id", uint32_t(*v.eom_id)));

  const std::vector<OutTensor> tensors = gguf_tensors(s, w);
  std::vector<std::string> data;
  GgufBuilder info;
  uint64_t offset = 0;
  for (const OutTensor& t : tensors) {
    data.push_back(t.block_type ? encode_ggml_blocks(t.block_type, *t.values).bytes
                                : encode_tensor(t.dtype, *t.values));
    const std::vector<int64_t> ne =
        t.rows ? std::vector<int64_t>{t.cols, t.rows} : std::vector<int64_t>{t.cols};
    info.tensor_info(t.name, ne, t.block_type ? t.block_type : ggml_id(t.dtype), offset);
    offset += (data.back().size() + kAlignment - 1) / kAlignment * kAlignment;
  }
  GgufBuilder file;
  file.header(tensors.size(), n_kv).raw(kv.bytes()).raw(info.bytes()).pad_to(kAlignment);
  for (const std::string& d : data) file.raw(d).pad_to(kAlignment);
  write_bytes(path, file.bytes());
}

std::vector<float> permute_to_hf(const std::vector<float>& rows, int32_t heads, int32_t head_dim,
                                 int64_t cols) {
  std::vector<float> out(rows.size());
  const int32_t half = head_dim / 2;
  for (int32_t h = 0; h < heads; ++h) {
    for (int32_t j = 0; j < half; ++j) {
      for (int32_t t = 0; t < 2; ++t) {
        const int64_t meta = int64_t(h) * head_dim + 2 * j + t;
        const int64_t hf = int64_t(h) * head_dim + t * half + j;
        std::copy_n(rows.begin() + meta * cols, cols, out.begin() + hf * cols);
      }
    }
  }
  return out;
}

void write_hf_dir(const SynthSpec& s, const SynthWeights& w, const std::filesystem::path& dir,
                  const std::filesystem::path& tokenizer_model, const HfDirOptions& options) {
  std::filesystem::create_directories(dir);
  nlohmann::ordered_json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"model_type", "llama"},
                                   {"hidden_size", s.dim},
                                   {"intermediate_size", s.hidden_dim},
                                   {"num_attention_heads", s.n_heads},
                                   {"num_key_value_heads", s.n_kv_heads},
                                   {"num_hidden_layers", s.n_layers},
                                   {"vocab_size", s.n_vocab},
                                   {"max_position_embeddings", s.context_length},
                                   {"rms_norm_eps", double(s.rms_eps)},
                                   {"rope_theta", double(s.rope_theta)},
                                   {"rope_scaling", nullptr},
                                   {"hidden_act", "silu"},
                                   {"tie_word_embeddings", s.tied},
                                   {"bos_token_id", 1},
                                   {"eos_token_id", 2},
                                   {"torch_dtype", "float32"}};
  if (s.head_dim) config["head_dim"] = s.head_dim;
  if (!options.config_patch.empty()) {
    config.merge_patch(nlohmann::ordered_json::parse(options.config_patch));
  }
  write_bytes(dir / "config.json", config.dump(2));
  if (!options.generation_config.empty()) {
    write_bytes(dir / "generation_config.json", options.generation_config);
  }
  nlohmann::ordered_json tok_config = {{"add_bos_token", true},
                                       {"tokenizer_class", "LlamaTokenizer"}};
  if (!options.chat_template.empty()) tok_config["chat_template"] = options.chat_template;
  write_bytes(dir / "tokenizer_config.json", tok_config.dump(2));
  if (!tokenizer_model.empty()) {
    std::filesystem::copy_file(tokenizer_model, dir / "tokenizer.model",
                               std::filesystem::copy_options::overwrite_existing);
  }

  const DType dtype = s.dtype;
  const std::string dt = safetensors_name(dtype);
  const int64_t q_rows = int64_t(s.n_heads) * s.hd(), kv_rows = int64_t(s.n_kv_heads) * s.hd();
  std::vector<SafetensorsEntry> entries;
  auto mat = [&](std::string name, int64_t rows, int64_t cols, const std::vector<float>& v) {
    entries.push_back({std::move(name), dt, {rows, cols}, encode_tensor(dtype, v)});
  };
  auto vec = [&](std::string name, const std::vector<float>& v) {
    entries.push_back({std::move(name), "F32", {int64_t(v.size())}, encode_tensor(DType::f32, v)});
  };
  mat("model.embed_tokens.weight", s.n_vocab, s.dim, w.tok_embd);
  for (int32_t l = 0; l < s.n_layers; ++l) {
    const SynthLayer& L = w.layers[size_t(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    vec(p + "input_layernorm.weight", L.attn_norm);
    mat(p + "self_attn.q_proj.weight", q_rows, s.dim,
        permute_to_hf(L.wq, s.n_heads, s.hd(), s.dim));
    mat(p + "self_attn.k_proj.weight", kv_rows, s.dim,
        permute_to_hf(L.wk, s.n_kv_heads, s.hd(), s.dim));
    mat(p + "self_attn.v_proj.weight", kv_rows, s.dim, L.wv);
    mat(p + "self_attn.o_proj.weight", s.dim, q_rows, L.wo);
    vec(p + "post_attention_layernorm.weight", L.ffn_norm);
    mat(p + "mlp.gate_proj.weight", s.hidden_dim, s.dim, L.w_gate);
    mat(p + "mlp.up_proj.weight", s.hidden_dim, s.dim, L.w_up);
    mat(p + "mlp.down_proj.weight", s.dim, s.hidden_dim, L.w_down);
  }
  vec("model.norm.weight", w.output_norm);
  if (!s.tied) mat("lm_head.weight", s.n_vocab, s.dim, w.output);

  if (options.n_shards <= 1) {
    write_bytes(dir / "model.safetensors", safetensors_file(entries));
    return;
  }
  // Contiguous groups of tensors, one per shard, named as transformers names them.
  nlohmann::ordered_json index = {{"metadata", {{"total_size", 0}}},
                                  {"weight_map", nlohmann::ordered_json::object()}};
  const size_t n = size_t(options.n_shards);
  for (size_t k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, n);
    std::vector<SafetensorsEntry> part(entries.begin() + long(entries.size() * k / n),
                                       entries.begin() + long(entries.size() * (k + 1) / n));
    for (const SafetensorsEntry& e : part) index["weight_map"][e.name] = name;
    write_bytes(dir / name, safetensors_file(part));
  }
  write_bytes(dir / "model.safetensors.index.json", index.dump(2));
}

}  // namespace parley::test

// The tiny model every model regression starts from, in both file formats.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "files/fuzz_files.h"
#include "files/tiny_gguf.h"
#include "model/tokenizer_source.h"
#include "support/safetensors_builder.h"
#include "support/synth_model.h"
#include "text/spm_model_proto.h"

namespace parley::test {
namespace {

constexpr int32_t kDim = 8, kHeads = 2, kKvHeads = 1, kHeadDim = 4, kHidden = 16, kVocab = 264,
                  kContext = 64;
constexpr size_t kAlignment = 32;

// Broken shapes (negative, overflowing, huge) get a placeholder of 32 bytes: the reader must
// refuse them before it looks at data.
size_t tensor_bytes(const TinyGguf::Tensor& t) {
  uint64_t n = 1;
  for (int64_t d : t.ne) {
    if (d <= 0 || __builtin_mul_overflow(n, uint64_t(d), &n) || n > (uint64_t(1) << 20)) return 32;
  }
  switch (t.type) {
    case ggml_type::F16:
    case ggml_type::BF16: return size_t(n * 2);
    case ggml_type::Q8_0: return size_t(n / 32 * 34);
    default: return size_t(n * 4);
  }
}

// Values are irrelevant to every check; norm vectors get 1 so the model is not all zeros.
std::string tensor_data(const TinyGguf::Tensor& t) {
  std::string d(tensor_bytes(t), '\0');
  if (t.ne.size() == 1 && t.type == ggml_type::F32) {
    const float one = 1.0f;
    for (size_t i = 0; i + 4 <= d.size(); i += 4) d.replace(i, 4, reinterpret_cast<const char*>(&one), 4);
  }
  return d;
}

void write_header_and_meta(const TinyGguf& g, GgufBuilder& b) {
  b.header(g.n_tensors.value_or(g.tensors.size()), g.n_kv.value_or(g.meta.size()), g.version);
  for (const auto& m : g.meta) m.write(b);
}

model::GgufVocab tiny_vocab() { return gguf_vocab_of(make_spm_vocab(kVocab)); }

}  // namespace

void put_u32_at(std::string& bytes, size_t at, uint32_t v) {
  for (size_t i = 0; i < 4; ++i) bytes[at + i] = char((v >> (8 * i)) & 0xffu);
}

void put_u64_at(std::string& bytes, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) bytes[at + i] = char((v >> (8 * i)) & 0xffu);
}

void TinyGguf::set(const std::string& key, std::function<void(GgufBuilder&)> write) {
  for (Meta& m : meta) {
    if (m.key == key) {
      m.write = std::move(write);
      return;
    }
  }
  meta.push_back({key, std::move(write)});
}

TinyGguf::Tensor& TinyGguf::tensor(const std::string& name) {
  for (Tensor& t : tensors) {
    if (t.name == name) return t;
  }
  throw std::logic_error("tiny GGUF has no tensor " + name);
}

size_t TinyGguf::directory_offset() const {
  GgufBuilder b;
  write_header_and_meta(*this, b);
  return b.size();
}

std::string TinyGguf::bytes() const {
  GgufBuilder b;
  write_header_and_meta(*this, b);
  uint64_t cursor = 0;
  for (const Tensor& t : tensors) {
    b.tensor_info(t.name, t.ne, t.type, t.offset.value_or(cursor));
    cursor += (tensor_bytes(t) + kAlignment - 1) / kAlignment * kAlignment;
  }
  b.pad_to(kAlignment);
  for (const Tensor& t : tensors) b.raw(tensor_data(t)).pad_to(kAlignment);
  return b.bytes();
}

TinyGguf tiny_gguf() {
  TinyGguf g;
  const SynthVocab v = make_spm_vocab(kVocab);
  auto u32 = [&](const char* key, uint32_t value) {
    g.set(key, [key, value](GgufBuilder& b) { b.kv_u32(key, value); });
  };
  g.set("general.architecture", [](GgufBuilder& b) { b.kv_str("general.architecture", "llama"); });
  g.set("general.name", [](GgufBuilder& b) { b.kv_str("general.name", "tiny"); });
  u32("general.alignment", kAlignment);
  u32("llama.context_length", kContext);
  u32("llama.embedding_length", kDim);
  u32("llama.block_count", 1);
  u32("llama.feed_forward_length", kHidden);
  u32("llama.rope.dimension_count", kHeadDim);
  u32("llama.attention.head_count", kHeads);
  u32("llama.attention.head_count_kv", kKvHeads);
  g.set("llama.attention.layer_norm_rms_epsilon",
        [](GgufBuilder& b) { b.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f); });
  g.set("tokenizer.ggml.model", [](GgufBuilder& b) { b.kv_str("tokenizer.ggml.model", "llama"); });
  g.set("tokenizer.ggml.tokens", [v](GgufBuilder& b) { b.kv_strings("tokenizer.ggml.tokens", v.tokens); });
  g.set("tokenizer.ggml.scores", [v](GgufBuilder& b) { b.kv_f32s("tokenizer.ggml.scores", v.scores); });
  g.set("tokenizer.ggml.token_type",
        [v](GgufBuilder& b) { b.kv_i32s("tokenizer.ggml.token_type", v.types); });
  u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
  u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
  u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk_id));
  g.set("tokenizer.ggml.add_bos_token",
        [](GgufBuilder& b) { b.kv_bool("tokenizer.ggml.add_bos_token", true); });

  g.tensors = {{"token_embd.weight", {kDim, kVocab}},
               {"output_norm.weight", {kDim}},
               {"blk.0.attn_norm.weight", {kDim}},
               {"blk.0.attn_q.weight", {kDim, kHeads * kHeadDim}},
               {"blk.0.attn_k.weight", {kDim, kKvHeads * kHeadDim}},
               {"blk.0.attn_v.weight", {kDim, kKvHeads * kHeadDim}},
               {"blk.0.attn_output.weight", {kHeads * kHeadDim, kDim}},
               {"blk.0.ffn_norm.weight", {kDim}},
               {"blk.0.ffn_gate.weight", {kDim, kHidden}},
               {"blk.0.ffn_up.weight", {kDim, kHidden}},
               {"blk.0.ffn_down.weight", {kHidden, kDim}}};
  return g;
}

std::string tiny_gguf_file() { return tiny_gguf().bytes(); }

std::string tiny_safetensors_file() {
  auto zeros = [](int64_t rows, int64_t cols) {
    return std::string(size_t(rows * cols * 4), '\0');
  };
  std::vector<SafetensorsEntry> t = {
      {"model.embed_tokens.weight", "F32", {kVocab, kDim}, zeros(kVocab, kDim)},
      {"model.norm.weight", "F32", {kDim}, zeros(1, kDim)},
      {"model.layers.0.input_layernorm.weight", "F32", {kDim}, zeros(1, kDim)},
      {"model.layers.0.self_attn.q_proj.weight", "F32", {kHeads * kHeadDim, kDim},
       zeros(kHeads * kHeadDim, kDim)},
      {"model.layers.0.self_attn.k_proj.weight", "F32", {kKvHeads * kHeadDim, kDim},
       zeros(kKvHeads * kHeadDim, kDim)},
      {"model.layers.0.self_attn.v_proj.weight", "F32", {kKvHeads * kHeadDim, kDim},
       zeros(kKvHeads * kHeadDim, kDim)},
      {"model.layers.0.self_attn.o_proj.weight", "F32", {kDim, kHeads * kHeadDim},
       zeros(kDim, kHeads * kHeadDim)},
      {"model.layers.0.post_attention_layernorm.weight", "F32", {kDim}, zeros(1, kDim)},
      {"model.layers.0.mlp.gate_proj.weight", "F32", {kHidden, kDim}, zeros(kHidden, kDim)},
      {"model.layers.0.mlp.up_proj.weight", "F32", {kHidden, kDim}, zeros(kHidden, kDim)},
      {"model.layers.0.mlp.down_proj.weight", "F32", {kDim, kHidden}, zeros(kDim, kHidden)},
  };
  return safetensors_file(t);
}

std::string tiny_hf_config_json() {
  const nlohmann::ordered_json config = {{"architectures", {"LlamaForCausalLM"}},
                                         {"model_type", "llama"},
                                         {"hidden_size", kDim},
                                         {"intermediate_size", kHidden},
                                         {"num_attention_heads", kHeads},
                                         {"num_key_value_heads", kKvHeads},
                                         {"num_hidden_layers", 1},
                                         {"vocab_size", kVocab},
                                         {"max_position_embeddings", kContext},
                                         {"rms_norm_eps", 1e-5},
                                         {"rope_theta", 10000.0},
                                         {"hidden_act", "silu"},
                                         {"tie_word_embeddings", true},
                                         {"bos_token_id", 1},
                                         {"eos_token_id", 2}};
  return config.dump(2);
}

std::string tiny_tokenizer_model() { return text::build_spm_model_proto(tiny_vocab()); }

}  // namespace parley::test

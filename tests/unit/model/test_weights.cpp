#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <stdexcept>

#include "support/error_check.h"
#include "model/ggml_quants.h"
#include "model/weights.h"
#include "support/synth_model.h"
#include "support/tensor_codec.h"

using parley::Status;
using parley::model::build_weights;
using parley::model::DType;
using parley::model::FileTensor;
using parley::model::ModelConfig;
using parley::model::TensorNaming;

namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_vocab = 6;
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.context_length = 16;
  return c;
}

// Tensors of a model, with their bytes kept at stable addresses.
class TensorSet {
 public:
  TensorSet& add(const std::string& name, std::vector<int64_t> shape, DType dtype,
                 const std::vector<float>& values, size_t misalign = 0) {
    std::string& buf = storage_.emplace_back(misalign, '\0');
    buf += parley::test::encode_tensor(dtype, values);
    tensors.push_back({name, dtype, std::move(shape),
                       reinterpret_cast<const std::byte*>(buf.data()) + misalign,
                       buf.size() - misalign});
    return *this;
  }
  // Values that identify the tensor and the element: 1000 * id + index (small enough for F16).
  TensorSet& add_counting(const std::string& name, std::vector<int64_t> shape,
                          DType dtype = DType::f32) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = float(tensors.size() % 8) * 100.0f + float(i % 100);
    return add(name, std::move(shape), dtype, v);
  }
  // A tensor in ggml blocks that the loader converts (ggml_quants.h), held as type's held.
  TensorSet& add_blocks(const std::string& name, std::vector<int64_t> shape,
                        const parley::model::GgmlBlockType& type, std::string bytes) {
    const std::string& buf = storage_.emplace_back(std::move(bytes));
    tensors.push_back({name, type.held, std::move(shape),
                       reinterpret_cast<const std::byte*>(buf.data()), buf.size(), &type});
    return *this;
  }
  FileTensor& at(const std::string& name) {
    for (FileTensor& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::out_of_range("no tensor " + name);
  }
  void erase(const std::string& name) {
    std::erase_if(tensors, [&](const FileTensor& t) { return t.name == name; });
  }

  std::vector<FileTensor> tensors;

 private:
  std::deque<std::string> storage_;
};

// Every tensor of tiny_config() (or `c`, of the same heads) under GGUF names; shapes are
// [rows, cols] (ne reversed).
TensorSet gguf_tensors(bool with_output, const ModelConfig& c = tiny_config()) {
  TensorSet s;
  s.add_counting("token_embd.weight", {c.n_vocab, c.dim});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    s.add_counting(p + "attn_norm.weight", {c.dim});
    s.add_counting(p + "attn_q.weight", {8, c.dim});
    s.add_counting(p + "attn_k.weight", {4, c.dim});
    s.add_counting(p + "attn_v.weight", {4, c.dim});
    s.add_counting(p + "attn_output.weight", {c.dim, 8});
    s.add_counting(p + "ffn_norm.weight", {c.dim});
    s.add_counting(p + "ffn_gate.weight", {c.hidden_dim, c.dim});
    s.add_counting(p + "ffn_up.weight", {c.hidden_dim, c.dim});
    s.add_counting(p + "ffn_down.weight", {c.dim, c.hidden_dim});
  }
  s.add_counting("output_norm.weight", {c.dim});
  if (with_output) s.add_counting("output.weight", {c.n_vocab, c.dim});
  return s;
}

TensorSet hf_tensors(bool with_lm_head, DType dtype = DType::f32) {
  const ModelConfig c = tiny_config();
  TensorSet s;
  s.add_counting("model.embed_tokens.weight", {c.n_vocab, c.dim}, dtype);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s.add_counting(p + "input_layernorm.weight", {c.dim});
    s.add_counting(p + "self_attn.q_proj.weight", {8, c.dim}, dtype);
    s.add_counting(p + "self_attn.k_proj.weight", {4, c.dim}, dtype);
    s.add_counting(p + "self_attn.v_proj.weight", {4, c.dim}, dtype);
    s.add_counting(p + "self_attn.o_proj.weight", {c.dim, 8}, dtype);
    s.add_counting(p + "post_attention_layernorm.weight", {c.dim});
    s.add_counting(p + "mlp.gate_proj.weight", {c.hidden_dim, c.dim}, dtype);
    s.add_counting(p + "mlp.up_proj.weight", {c.hidden_dim, c.dim}, dtype);
    s.add_counting(p + "mlp.down_proj.weight", {c.dim, c.hidden_dim}, dtype);
  }
  s.add_counting("model.norm.weight", {c.dim});
  if (with_lm_head) s.add_counting("lm_head.weight", {c.n_vocab, c.dim}, dtype);
  return s;
}

std::vector<float> floats_of(const parley::model::TensorView& v) {
  return parley::test::decode_view(v);
}

std::vector<float> floats_of(const FileTensor& t) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= size_t(d);
  return parley::test::decode_tensor(t.dtype, t.data, n);
}

// numpy: w.reshape(heads, hd/2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols), the
// Hugging Face conversion of interleaved rows to rotate-half rows.
std::vector<float> numpy_hf_permute(const std::vector<float>& w, int heads, int hd, int cols) {
  std::vector<float> out(w.size());
  const int half = hd / 2;
  for (int a = 0; a < heads; ++a) {
    for (int b = 0; b < half; ++b) {
      for (int c = 0; c < 2; ++c) {
        const int src_row = (a * half + b) * 2 + c;  // index (a, b, c) of shape (heads, hd/2, 2)
        const int dst_row = (a * 2 + c) * half + b;  // index (a, c, b) of shape (heads, 2, hd/2)
        for (int k = 0; k < cols; ++k)
          out[size_t(dst_row * cols + k)] = w[size_t(src_row * cols + k)];
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("weights: GGUF names, shapes and views") {
  TensorSet s = gguf_tensors(true);
  const auto w = build_weights(s.tensors, TensorNaming::gguf, tiny_config(), false);
  REQUIRE(w.layers.size() == 2);
  CHECK(w.tok_embd.rows == 6);
  CHECK(w.tok_embd.cols == 8);
  CHECK(w.tok_embd.data == s.at("token_embd.weight").data);  // no copy for aligned F32
  CHECK(w.layers[1].wq.name == "blk.1.attn_q.weight");
  CHECK(w.layers[1].wq.rows == 8);
  CHECK(w.layers[1].wk.rows == 4);
  CHECK(w.layers[1].wo.rows == 8);
  CHECK(w.layers[1].wo.cols == 8);
  CHECK(w.layers[0].w_down.rows == 8);
  CHECK(w.layers[0].w_down.cols == 12);
  CHECK(w.layers[0].attn_norm.rows == 1);
  CHECK(w.layers[0].attn_norm.cols == 8);
  CHECK(w.output_norm.cols == 8);
  CHECK_FALSE(w.tied_output);
  CHECK(w.output.data == s.at("output.weight").data);
  // GGUF q/k are already interleaved: untouched.
  CHECK(w.layers[0].wq.data == s.at("blk.0.attn_q.weight").data);
  CHECK(w.owned.empty());
  // 6*8 + 2 * (8 + 64 + 32 + 32 + 64 + 8 + 96 + 96 + 96) + 8 + 6*8
  CHECK(parley::model::count_parameters(w) == 48 + 2 * 496 + 8 + 48);
}

TEST_CASE("weights: the output matrix is tied when absent") {
  TensorSet s = gguf_tensors(false);
  const auto w = build_weights(s.tensors, TensorNaming::gguf, tiny_config(), false);
  CHECK(w.tied_output);
  CHECK(w.output.data == w.tok_embd.data);
  CHECK(w.output.rows == 6);
  CHECK(parley::model::count_parameters(w) == 48 + 2 * 496 + 8);
  TensorSet h = hf_tensors(true);
  const auto forced = build_weights(h.tensors, TensorNaming::hugging_face, tiny_config(), true);
  CHECK(forced.tied_output);  // tie_word_embeddings wins over a stray lm_head
  CHECK(forced.output.data == forced.tok_embd.data);
  const auto untied = build_weights(h.tensors, TensorNaming::hugging_face, tiny_config(), false);
  CHECK_FALSE(untied.tied_output);
  CHECK(untied.output.name == "lm_head.weight");
}

TEST_CASE("weights: HF q/k rows are un-permuted to interleaved order, other tensors untouched") {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(parley::model::row_bytes(dtype, 1));
    TensorSet s = hf_tensors(false, dtype);
    // Meta-order q/k with distinct rows, written the way numpy's HF conversion permutes them.
    std::vector<float> q_meta(8 * 8), k_meta(4 * 8);
    for (size_t i = 0; i < q_meta.size(); ++i) q_meta[i] = float(i / 8) * 10.0f + float(i % 8);
    for (size_t i = 0; i < k_meta.size(); ++i) k_meta[i] = -float(i / 8) * 10.0f - float(i % 8);
    s.erase("model.layers.1.self_attn.q_proj.weight");
    s.erase("model.layers.1.self_attn.k_proj.weight");
    s.add("model.layers.1.self_attn.q_proj.weight", {8, 8}, dtype,
          numpy_hf_permute(q_meta, 2, 4, 8));
    s.add("model.layers.1.self_attn.k_proj.weight", {4, 8}, dtype,
          numpy_hf_permute(k_meta, 1, 4, 8));
    const auto w = build_weights(s.tensors, TensorNaming::hugging_face, tiny_config(), false);
    CHECK(w.layers[1].wq.dtype == dtype);
    CHECK(floats_of(w.layers[1].wq) == parley::test::round_trip(dtype, q_meta));
    CHECK(floats_of(w.layers[1].wk) == parley::test::round_trip(dtype, k_meta));
    CHECK(floats_of(w.layers[1].wv) == floats_of(s.at("model.layers.1.self_attn.v_proj.weight")));
    CHECK(w.layers[1].wv.data == s.at("model.layers.1.self_attn.v_proj.weight").data);
    // The test writer's permutation is the same as numpy's.
    CHECK(parley::test::permute_to_hf(q_meta, 2, 4, 8) == numpy_hf_permute(q_meta, 2, 4, 8));
  }
}

TEST_CASE("weights: missing tensors and wrong shapes name the tensor") {
  for (const char* name : {"token_embd.weight", "blk.1.attn_k.weight", "blk.0.ffn_down.weight",
                           "output_norm.weight"}) {
    CAPTURE(name);
    TensorSet s = gguf_tensors(true);
    s.erase(name);
    CHECK_PARLEY_ERROR(build_weights(s.tensors, TensorNaming::gguf, tiny_config(), false),
                       Status::bad_model, std::string("'") + name + "' is missing");
  }
  TensorSet s = gguf_tensors(true);
  s.at("blk.1.attn_k.weight").shape = {8, 8};  // MHA-sized K in a GQA model
  CHECK_PARLEY_ERROR(build_weights(s.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'blk.1.attn_k.weight'", "[8, 8]", "expected [4, 8]");
  TensorSet t = gguf_tensors(true);
  t.at("blk.0.ffn_norm.weight").shape = {1, 8};
  CHECK_PARLEY_ERROR(build_weights(t.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'blk.0.ffn_norm.weight'", "expected [8]");
  TensorSet u = gguf_tensors(true);
  u.at("output.weight").shape = {8, 6};  // transposed
  CHECK_PARLEY_ERROR(build_weights(u.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'output.weight'");
  TensorSet h = hf_tensors(false);
  h.erase("model.layers.0.mlp.up_proj.weight");
  CHECK_PARLEY_ERROR(build_weights(h.tensors, TensorNaming::hugging_face, tiny_config(), false),
                     Status::bad_model, "'model.layers.0.mlp.up_proj.weight' is missing");
  TensorSet b = gguf_tensors(true);
  b.at("blk.0.attn_v.weight").n_bytes -= 4;
  CHECK_PARLEY_ERROR(build_weights(b.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'blk.0.attn_v.weight'", "bytes");
  // ggml blocks of 32 in rows of 8 values: refused even with the bytes 0 whole blocks take.
  TensorSet q = gguf_tensors(true);
  q.at("blk.0.attn_v.weight").blocks = parley::model::convertible_block_type(6);
  q.at("blk.0.attn_v.weight").n_bytes = 0;
  CHECK_PARLEY_ERROR(build_weights(q.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'blk.0.attn_v.weight'", "bytes", "as Q5_0");
}

// tiny_config's files: 2 layers of 9 tensors, the embedding, the final norm (and the output).
TEST_CASE("weights: a tensor the model would not use is refused, the first one named") {
  TensorSet h = hf_tensors(false);
  for (int l = 0; l < 2; ++l) {
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + proj;
      h.add_counting(name + ".bias", {proj[0] == 'q' ? 8 : 4});
    }
  }
  CHECK_PARLEY_ERROR(build_weights(h.tensors, TensorNaming::hugging_face, tiny_config(), false),
                     Status::bad_model, "'model.layers.0.self_attn.q_proj.bias' is not used",
                     "6 of 26 tensors", "biases are not supported");
  TensorSet g = gguf_tensors(true);
  g.add_counting("blk.1.attn_v.bias", {4});
  CHECK_PARLEY_ERROR(build_weights(g.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::bad_model, "'blk.1.attn_v.bias'", "1 of 22 tensors",
                     "biases are not supported");
  TensorSet o = hf_tensors(false);
  o.add_counting("something.else", {3, 3});
  CHECK_PARLEY_ERROR(build_weights(o.tensors, TensorNaming::hugging_face, tiny_config(), false),
                     Status::bad_model, "'something.else' is not used");
}

TEST_CASE("weights: a file with more layers than the config declares is refused") {
  ModelConfig one_layer = tiny_config();
  one_layer.n_layers = 1;
  CHECK_PARLEY_ERROR(
      build_weights(gguf_tensors(true).tensors, TensorNaming::gguf, one_layer, false),
      Status::bad_model, "'blk.1.attn_norm.weight' is not used", "9 of 21 tensors",
      "more layers than the 1 llama.block_count");
  CHECK_PARLEY_ERROR(
      build_weights(hf_tensors(true).tensors, TensorNaming::hugging_face, one_layer, false),
      Status::bad_model, "'model.layers.1.input_layernorm.weight' is not used",
      "more layers than the 1 num_hidden_layers");
}

TEST_CASE("weights: tensors that only restate the config are passed over") {
  TensorSet h = hf_tensors(false);
  h.add_counting("model.layers.0.self_attn.rotary_emb.inv_freq", {2});
  h.add_counting("model.layers.1.self_attn.rotary_emb.inv_freq", {2});
  CHECK_NOTHROW(build_weights(h.tensors, TensorNaming::hugging_face, tiny_config(), false));
  // Tied by the config: transformers overrides the file's lm_head.weight, and so does Parley.
  const TensorSet tied = hf_tensors(true);
  const auto w = build_weights(tied.tensors, TensorNaming::hugging_face, tiny_config(), true);
  CHECK(w.output.data == w.tok_embd.data);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(int(dtype));
    TensorSet g = gguf_tensors(true);
    g.add("rope_freqs.weight", {2}, dtype, {1.0f, 1.0f});  // head_dim / 2 factors
    CHECK_NOTHROW(build_weights(g.tensors, TensorNaming::gguf, tiny_config(), false));
  }
  // Factors other than one change every rotation: llama3-style RoPE, which Parley lacks.
  TensorSet scaled = gguf_tensors(true);
  scaled.add("rope_freqs.weight", {2}, DType::f32, {1.0f, 8.0f});
  CHECK_PARLEY_ERROR(build_weights(scaled.tensors, TensorNaming::gguf, tiny_config(), false),
                     Status::unsupported, "'rope_freqs.weight'", "llama3-style");
}

// A Q6_K block of code `code` and scale 127 throughout, its d last.
std::string q6_k_block(uint16_t d, int code) {
  std::string b(210, '\0');
  const int low = code & 0x0f, high = code >> 4;
  std::fill_n(b.begin(), 128, char(low | low << 4));
  std::fill_n(b.begin() + 128, 64, char(high * 0x55));
  std::fill_n(b.begin() + 192, 16, char(127));
  std::memcpy(b.data() + 208, &d, 2);
  return b;
}

// Q6_K is held as Q8_0, whose scale is the largest value / 127 in F16: values past 127 * 65504
// would get an infinite one (and read back as NaN at every send).
TEST_CASE("weights: a Q6_K matrix whose values need a Q8_0 scale beyond F16 names the tensor") {
  ModelConfig c = tiny_config();
  c.dim = 256;  // one Q6_K block per row
  const auto* q6_k = parley::model::convertible_block_type(14);
  REQUIRE(q6_k != nullptr);
  constexpr uint16_t kOne = 0x3c00, kF16Max = 0x7bff;
  std::string rows;
  for (int r = 0; r < 8; ++r) rows += q6_k_block(kOne, 40);
  TensorSet s = gguf_tensors(true, c);
  s.erase("blk.1.attn_q.weight");
  s.add_blocks("blk.1.attn_q.weight", {8, 256}, *q6_k, rows);
  const auto w = build_weights(s.tensors, TensorNaming::gguf, c, false);
  CHECK(w.layers[1].wq.dtype == DType::q8_0);
  CHECK(floats_of(w.layers[1].wq) == std::vector<float>(8 * 256, 127.0f * 8));

  rows.replace(5 * 210, 210, q6_k_block(kF16Max, 63));  // 65504 * 127 * 31: 2.6e8
  TensorSet big = gguf_tensors(true, c);
  big.erase("blk.1.attn_q.weight");
  big.add_blocks("blk.1.attn_q.weight", {8, 256}, *q6_k, rows);
  CHECK_PARLEY_ERROR(build_weights(big.tensors, TensorNaming::gguf, c, false), Status::bad_model,
                     "tensor 'blk.1.attn_q.weight' (Q6_K)", "F16's range", "Q8_0 cannot hold");
}

TEST_CASE("weights: misaligned data is copied to aligned memory; norms become F32") {
  TensorSet s = hf_tensors(false, DType::f16);
  s.erase("model.layers.0.self_attn.v_proj.weight");
  s.add("model.layers.0.self_attn.v_proj.weight", {4, 8}, DType::f32, std::vector<float>(32, 0.25f),
        1);
  s.erase("model.norm.weight");
  s.add("model.norm.weight", {8}, DType::bf16, {1, 2, 3, 4, 5, 6, 7, 8});
  const auto w = build_weights(s.tensors, TensorNaming::hugging_face, tiny_config(), false);
  const auto& v = w.layers[0].wv;
  CHECK(reinterpret_cast<uintptr_t>(v.data) % 4 == 0);
  CHECK(floats_of(v) == std::vector<float>(32, 0.25f));
  CHECK(w.output_norm.dtype == DType::f32);
  CHECK(w.output_norm.n_bytes == 32);
  CHECK(floats_of(w.output_norm) == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
}

#include "tiny_model.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/dtype.h"
#include "support/tensor_codec.h"

namespace parley::test {

std::vector<float> random_values(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void fill_kv_randomly(kv::KvCache& kv, int32_t layer, uint32_t positions, std::mt19937& rng) {
  const size_t row = size_t(kv.shape().row());
  for (uint32_t p = 0; p < positions; ++p) {
    const auto k = random_values(row, 3.0f, rng);
    const auto v = random_values(row, 1.0f, rng);
    kv.write(layer, p, k.data(), v.data());
  }
}

model::TensorView make_tensor(model::Weights& owner, const std::string& name, model::DType dtype,
                              int64_t rows, int64_t cols, const std::vector<float>& values) {
  if (values.size() != size_t(rows * cols)) throw std::invalid_argument("wrong value count");
  const std::string bytes = encode_tensor(dtype, values);
  model::OwnedBytes buffer(bytes.size());
  std::memcpy(buffer.data(), bytes.data(), bytes.size());
  model::TensorView t;
  t.name = name;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  t.data = buffer.data();
  t.n_bytes = bytes.size();
  owner.owned.push_back(std::move(buffer));
  return t;
}

std::vector<double> decode_tensor(const model::TensorView& t) {
  std::vector<double> out(size_t(t.n_elements()));
  for (int64_t r = 0; r < t.rows; ++r) {
    const std::byte* row = t.row(r);
    for (int64_t c = 0; c < t.cols; ++c) {
      double v = 0.0;
      switch (t.dtype) {
        case model::DType::f32: v = reinterpret_cast<const float*>(row)[c]; break;
        case model::DType::f16:
          v = model::f16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]);
          break;
        case model::DType::bf16:
          v = model::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]);
          break;
        case model::DType::q8_0: {
          const auto& b = reinterpret_cast<const model::Q8Block*>(row)[c / model::kQ8BlockValues];
          v = double(model::f16_to_f32(b.d)) * double(b.q[c % model::kQ8BlockValues]);
          break;
        }
        case model::DType::q4_0: {  // value j and j + 16 in the nibbles of byte j, less 8
          const auto& b = reinterpret_cast<const model::Q4_0Block*>(row)[c / 32];
          const uint8_t byte = b.q[c % 16];
          const int code = c % 32 < 16 ? byte & 0x0f : byte >> 4;
          v = double(model::f16_to_f32(b.d)) * (code - 8);
          break;
        }
        case model::DType::q4_1: {  // value j and j + 16 in the nibbles of byte j
          const auto& b = reinterpret_cast<const model::Q4_1Block*>(row)[c / 32];
          const uint8_t byte = b.q[c % 16];
          const int code = c % 32 < 16 ? byte & 0x0f : byte >> 4;
          v = double(model::f16_to_f32(b.d)) * code + double(model::f16_to_f32(b.m));
          break;
        }
        case model::DType::q5_1: {  // as Q4_1, bit j of the word qh the fifth bit of value j
          const auto& b = reinterpret_cast<const model::Q5_1Block*>(row)[c / 32];
          const uint8_t byte = b.q[c % 16];
          const int fifth = (b.qh[c % 32 / 8] >> (c % 8)) & 1;
          const int code = (c % 32 < 16 ? byte & 0x0f : byte >> 4) | fifth << 4;
          v = double(model::f16_to_f32(b.d)) * code + double(model::f16_to_f32(b.m));
          break;
        }
      }
      out[size_t(r * t.cols + c)] = v;
    }
  }
  return out;
}

TinyModel make_tiny_model(const TinySpec& s) {
  TinyModel m;
  model::ModelConfig& c = m.config;
  c.name = "tiny";
  c.n_vocab = s.n_vocab;
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = s.head_dim;
  c.context_length = 256;
  c.sliding_window = s.sliding_window;
  c.rope_theta = s.rope_theta;

  std::mt19937 rng(s.seed);
  model::Weights& w = m.weights;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, float scale) {
    const model::DType t = model::is_blocked(s.dtype) && cols % model::kQ8BlockValues != 0
                               ? model::DType::f16
                               : s.dtype;
    return make_tensor(w, name, t, rows, cols, random_values(size_t(rows * cols), scale, rng));
  };
  auto norm = [&](const std::string& name) {
    const model::DType t = model::is_blocked(s.dtype) ? model::DType::f32 : s.dtype;
    std::vector<float> v = random_values(size_t(s.dim), 0.2f, rng);
    for (float& x : v) x += 1.0f;
    return make_tensor(w, name, t, 1, s.dim, v);
  };
  // Scales keep activations O(1) and logits O(1..10): products of n inputs get 1/sqrt(n).
  auto fan_in = [](int64_t n) { return std::sqrt(3.0f / float(n)); };
  const int64_t q_dim = int64_t(s.n_heads) * s.head_dim;
  const int64_t kv_dim = int64_t(s.n_kv_heads) * s.head_dim;
  w.tok_embd = matrix("tok_embd", s.n_vocab, s.dim, 1.0f);
  for (int32_t l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    model::LayerWeights lw;
    lw.attn_norm = norm(p + "attn_norm");
    // Larger q/k weights give peaked attention, so softmax errors would show.
    lw.wq = matrix(p + "wq", q_dim, s.dim, 2.0f * fan_in(s.dim));
    lw.wk = matrix(p + "wk", kv_dim, s.dim, 2.0f * fan_in(s.dim));
    lw.wv = matrix(p + "wv", kv_dim, s.dim, fan_in(s.dim));
    lw.wo = matrix(p + "wo", s.dim, q_dim, fan_in(q_dim));
    lw.ffn_norm = norm(p + "ffn_norm");
    lw.w_gate = matrix(p + "w_gate", s.hidden_dim, s.dim, 2.0f * fan_in(s.dim));
    lw.w_up = matrix(p + "w_up", s.hidden_dim, s.dim, fan_in(s.dim));
    lw.w_down = matrix(p + "w_down", s.dim, s.hidden_dim, fan_in(s.hidden_dim));
    w.layers.push_back(lw);
  }
  w.output_norm = norm("output_norm");
  if (s.tied) {
    // The embedding's scale (1) gives logits of std sqrt(dim / 3): 3..7 for these sizes.
    w.output = w.tok_embd;
    w.tied_output = true;
  } else {
    w.output = matrix("output", s.n_vocab, s.dim, 3.0f * fan_in(s.dim));
  }
  return m;
}

}  // namespace parley::test

#include "kv/kv_cache.h"
#include "reference_forward.h"

#include <algorithm>
#include <cfenv>
#include <cmath>

#include "model/dtype.h"
#include "tiny_model.h"

namespace parley::test {
namespace {

using Vec = std::vector<double>;

struct Matrix {
  Vec values;  // [rows, cols]
  int64_t rows = 0, cols = 0;
  explicit Matrix(const model::TensorView& t)
      : values(decode_tensor(t)), rows(t.rows), cols(t.cols) {}
  Vec operator*(const Vec& x) const {
    Vec y(size_t(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        y[size_t(r)] += values[size_t(r * cols + c)] * x[size_t(c)];
    }
    return y;
  }
};

Vec rmsnorm(const Vec& x, const Vec& w, double eps) {
  double ms = 0.0;
  for (double v : x) ms += v * v;
  ms /= double(x.size());
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] / std::sqrt(ms + eps) * w[i];
  return out;
}

void rope(Vec& x, int n_heads, int head_dim, int pos, double theta) {
  for (int h = 0; h < n_heads; ++h) {
    for (int j = 0; j < head_dim / 2; ++j) {
      const double angle = pos * std::pow(theta, -2.0 * j / head_dim);
      double& a = x[size_t(h * head_dim + 2 * j)];
      double& b = x[size_t(h * head_dim + 2 * j + 1)];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(angle) - b0 * std::sin(angle);
      b = a0 * std::sin(angle) + b0 * std::cos(angle);
    }
  }
}

// What the cache gives back for one token's K or V row.
Vec stored(const Vec& x, int n_kv_heads, int head_dim, kv::KvType type) {
  Vec out(x.size());
  for (int h = 0; h < n_kv_heads; ++h) {
    const size_t base = size_t(h * head_dim);
    double amax = 0.0;
    for (int i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(x[base + size_t(i)]));
    const double s = amax / 127.0;
    for (int i = 0; i < head_dim; ++i) {
      const double v = x[base + size_t(i)];
      switch (type) {
        case kv::KvType::int8: {
          const double q = s > 0.0 ? std::clamp(std::nearbyint(v / s), -127.0, 127.0) : 0.0;
          out[base + size_t(i)] = q * s;
          break;
        }
        case kv::KvType::f16:
          out[base + size_t(i)] = model::f16_to_f32(model::f32_to_f16(float(v)));
          break;
        case kv::KvType::f32: out[base + size_t(i)] = v; break;
      }
    }
  }
  return out;
}

// The spacing of F16 values around |x|.
double f16_step(double x) {
  x = std::fabs(x);
  if (x < 6.103515625e-05) return std::ldexp(1.0, -24);  // subnormal range
  return std::ldexp(1.0, int(std::floor(std::log2(x))) - 10);
}

// Compares one token's K or V row the backend stored with the reference's own, then
// replaces `own` with the backend's values.
void compare_and_adopt(Vec& own, const kv::KvCache& kv, int layer, size_t pos, bool is_k,
                       KvCheck& check) {
  const int hd = kv.shape().head_dim;
  std::vector<float> theirs(static_cast<size_t>(hd));
  for (int h = 0; h < kv.shape().n_kv_heads; ++h) {
    if (is_k) {
      kv.read_k(layer, uint32_t(pos), h, theirs.data());
    } else {
      kv.read_v(layer, uint32_t(pos), h, theirs.data());
    }
    double amax = 0.0;
    for (int i = 0; i < hd; ++i) amax = std::max(amax, std::fabs(own[size_t(h * hd + i)]));
    for (int i = 0; i < hd; ++i) {
      double& mine = own[size_t(h * hd + i)];
      const double d = std::fabs(mine - theirs[size_t(i)]);
      const double noise = 1e-5 * amax;
      const double step = kv.type() == kv::KvType::int8
                              ? amax / 127.0
                              : std::max(f16_step(mine), f16_step(theirs[size_t(i)]));
      ++check.values;
      if (d > noise) ++(d <= 1.01 * step + noise ? check.rounding_flips : check.mismatches);
      mine = theirs[size_t(i)];
    }
  }
}

}  // namespace

std::vector<std::vector<double>> reference_forward(const model::ModelConfig& c,
                                                   const model::Weights& w,
                                                   const std::vector<int32_t>& tokens,
                                                   kv::KvType kv_type,
                                                   const kv::KvCache* backend_kv, KvCheck* check) {
  KvCheck unused;
  if (!check) check = &unused;
  std::fesetround(FE_TONEAREST);  // nearbyint: round half to even
  const int hd = c.head_dim;
  const double eps = c.rms_eps;
  const Matrix embed(w.tok_embd);
  const Matrix output(w.output.empty() ? w.tok_embd : w.output);
  const Vec out_norm = decode_tensor(w.output_norm);
  struct Layer {
    Vec attn_norm, ffn_norm;
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
    std::vector<Vec> k_cache, v_cache;  // [pos][n_kv_heads * head_dim]
  };
  std::vector<Layer> layers;
  for (const model::LayerWeights& lw : w.layers) {
    layers.push_back(Layer{decode_tensor(lw.attn_norm),
                           decode_tensor(lw.ffn_norm),
                           Matrix(lw.wq),
                           Matrix(lw.wk),
                           Matrix(lw.wv),
                           Matrix(lw.wo),
                           Matrix(lw.w_gate),
                           Matrix(lw.w_up),
                           Matrix(lw.w_down),
                           {},
                           {}});
  }

  std::vector<Vec> all_logits;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    Vec x(embed.values.begin() + int64_t(tokens[pos]) * c.dim,
          embed.values.begin() + int64_t(tokens[pos] + 1) * c.dim);
    for (size_t l = 0; l < layers.size(); ++l) {
      Layer& L = layers[l];
      const Vec h = rmsnorm(x, L.attn_norm, eps);
      Vec q = L.wq * h, k = L.wk * h;
      const Vec v = L.wv * h;
      rope(q, c.n_heads, hd, int(pos), c.rope_theta);
      rope(k, c.n_kv_heads, hd, int(pos), c.rope_theta);
      L.k_cache.push_back(stored(k, c.n_kv_heads, hd, kv_type));
      L.v_cache.push_back(stored(v, c.n_kv_heads, hd, kv_type));
      if (backend_kv) {
        compare_and_adopt(L.k_cache.back(), *backend_kv, int(l), pos, true, *check);
        compare_and_adopt(L.v_cache.back(), *backend_kv, int(l), pos, false, *check);
      }

      Vec att(size_t(c.n_heads * hd), 0.0);
      const size_t first = c.sliding_window > 0 && pos + 1 > size_t(c.sliding_window)
                               ? pos + 1 - size_t(c.sliding_window)
                               : 0;
      for (int head = 0; head < c.n_heads; ++head) {
        const int kv_head = head / (c.n_heads / c.n_kv_heads);
        Vec scores;
        for (size_t t = first; t <= pos; ++t) {
          double dot = 0.0;
          for (int i = 0; i < hd; ++i) {
            dot += q[size_t(head * hd + i)] * L.k_cache[t][size_t(kv_head * hd + i)];
          }
          scores.push_back(dot / std::sqrt(double(hd)));
        }
        const double m = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (double& s : scores) sum += (s = std::exp(s - m));
        for (size_t t = first; t <= pos; ++t) {
          for (int i = 0; i < hd; ++i) {
            att[size_t(head * hd + i)] +=
                scores[t - first] / sum * L.v_cache[t][size_t(kv_head * hd + i)];
          }
        }
      }
      const Vec o = L.wo * att;
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

      const Vec h2 = rmsnorm(x, L.ffn_norm, eps);
      const Vec g = L.w_gate * h2, u = L.w_up * h2;
      Vec a(g.size());
      for (size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const Vec d = L.w_down * a;
      for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
    }
    all_logits.push_back(output * rmsnorm(x, out_norm, eps));
  }
  return all_logits;
}

double max_abs_diff(const std::vector<std::vector<double>>& a, const std::vector<float>& b) {
  double worst = 0.0;
  size_t k = 0;
  for (const Vec& row : a) {
    for (double v : row) worst = std::max(worst, std::fabs(v - double(b.at(k++))));
  }
  return worst;
}

}  // namespace parley::test

#include "decode_traffic.h"

namespace parley::bench {

uint64_t weight_bytes_per_token(const model::Weights& w) {
  uint64_t bytes = w.output_norm.n_bytes + w.output.n_bytes;
  if (!w.tied_output) bytes += w.tok_embd.n_bytes / uint64_t(w.tok_embd.rows);  // one row
  for (const model::LayerWeights& L : w.layers) {
    bytes += L.attn_norm.n_bytes + L.ffn_norm.n_bytes;
    for (const model::TensorView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      bytes += m->n_bytes;
    }
  }
  return bytes;
}

double kv_bytes_read_per_token(uint64_t kv_bytes_per_token, uint32_t prompt_tokens,
                               uint32_t gen_tokens) {
  // TPOT spans the steps that feed generated tokens 1..G-1 back, at positions P..P+G-2; the
  // step at position p reads p + 1 tokens. Their mean is P + G/2.
  const double mean_context = double(prompt_tokens) + double(gen_tokens) / 2.0;
  return double(kv_bytes_per_token) * mean_context;
}

}  // namespace parley::bench

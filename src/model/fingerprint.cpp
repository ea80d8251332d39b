#include "model/fingerprint.h"

#include "common/hash.h"

namespace parley::model {

namespace {

// Bumped whenever what goes into the hash changes, so old stored KV is never matched.
constexpr uint64_t kFingerprintVersion = 1;
constexpr size_t kSampleWindows = 16;
constexpr size_t kWindowBytes = 64;

void add_config(Hasher& h, const ModelConfig& c) {
  // The name and chat template are left out: they do not change what a token's KV is.
  h.add(c.architecture);
  for (int32_t v : {c.n_vocab, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim,
                    c.context_length, c.sliding_window, c.bos_id, c.eos_id, c.unk_id, c.pad_id}) {
    h.add_value(v);
  }
  h.add_value(c.rms_eps).add_value(c.rope_theta);
}

// Tokens appended past tokenizer.model's pieces change what a chat marker's id stands for.
// Nothing is hashed without them (those restating its pieces, such as Llama 2's <unk>, <s>
// and </s>, change nothing), so that such models keep the fingerprints their stored KV was
// saved under.
void add_added_tokens(Hasher& h, const AddedPieces& added) {
  std::vector<const AddedToken*> appended;
  for (const AddedToken& t : added.tokens) {
    if (t.id >= added.n_own_pieces) appended.push_back(&t);
  }
  if (appended.empty()) return;
  h.add_value(uint64_t(appended.size()));
  for (const AddedToken* t : appended) {
    h.add_value(t->id).add_value(uint8_t(t->special)).add(t->content);
  }
}

void add_tokenizer(Hasher& h, const TokenizerSource& t) {
  h.add_value(int32_t(t.kind));
  if (t.kind == TokenizerSource::Kind::sentencepiece_proto) {
    h.add(t.proto_bytes);
    add_added_tokens(h, t.added);
    return;
  }
  const GgufVocab& v = t.vocab;
  h.add(v.model);
  h.add_value(uint64_t(v.tokens.size()));
  for (const std::string& s : v.tokens) h.add(s);
  h.add_value(uint64_t(v.scores.size())).add(v.scores.data(), v.scores.size() * sizeof(float));
  h.add_value(uint64_t(v.token_types.size()))
      .add(v.token_types.data(), v.token_types.size() * sizeof(int32_t));
  h.add_value(v.bos_id).add_value(v.eos_id).add_value(v.unk_id).add_value(v.pad_id);
  h.add_value(uint8_t(v.add_space_prefix)).add_value(uint8_t(v.remove_extra_whitespaces));
}

// Small tensors are hashed whole; larger ones by evenly spaced windows that include the
// first and the last bytes.
void add_tensor(Hasher& h, const TensorView& t) {
  h.add(t.name);
  h.add_value(uint8_t(t.dtype)).add_value(t.rows).add_value(t.cols).add_value(uint64_t(t.n_bytes));
  if (t.n_bytes <= kSampleWindows * kWindowBytes) {
    h.add(t.data, t.n_bytes);
    return;
  }
  const size_t last = t.n_bytes - kWindowBytes;
  for (size_t i = 0; i < kSampleWindows; ++i) {
    h.add(t.data + last * i / (kSampleWindows - 1), kWindowBytes);
  }
}

}  // namespace

uint64_t model_fingerprint(const ModelConfig& config, const TokenizerSource& tokenizer,
                           const Weights& weights) {
  // Seed 0: a non-zero seed makes xxh3's reset read the state before initialising it.
  Hasher h;
  h.add_value(kFingerprintVersion);
  add_config(h, config);
  add_tokenizer(h, tokenizer);
  add_tensor(h, weights.tok_embd);
  for (const LayerWeights& L : weights.layers) {
    for (const TensorView* v :
         {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.w_gate, &L.w_up, &L.w_down}) {
      add_tensor(h, *v);
    }
  }
  add_tensor(h, weights.output_norm);
  h.add_value(uint8_t(weights.tied_output));
  if (!weights.tied_output) add_tensor(h, weights.output);
  return h.digest();
}

}  // namespace parley::model

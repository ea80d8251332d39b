// Logits -> one token: logit biases -> penalties -> temperature -> top-k -> top-p -> min-p -> draw.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sample/rng.h"

namespace parley::sample {

// Why logits are NaN: a model file whose weights hold NaN or infinite values loads (checking
// every weight would cost a pass over the file) and computes NaN from then on.
inline constexpr const char* kNanLogitsMessage =
    "the model computed NaN logits: its weights hold NaN or infinite values (a damaged or "
    "badly converted model file)";

// A change to one token's logit: added before the penalty; -inf bans the token.
struct TokenBias {
  int32_t token;
  float bias;
};

struct SamplerParams {
  float temperature = 0.8f;     // 0 = greedy (argmax; the lowest id wins ties)
  int32_t top_k = 40;           // 0 = off
  float top_p = 0.95f;          // 1 = off
  float min_p = 0.05f;          // 0 = off
  float repeat_penalty = 1.0f;  // 1 = off; > 1 discourages tokens seen in the window
  uint32_t repeat_last_n = 64;  // the window: the last n ids of the history
  std::vector<TokenBias> logit_bias;  // each token at most once
};

class Sampler {
 public:
  // Throws Error(invalid_argument) for out-of-range parameters (negative temperature, a NaN
  // or +inf bias, a token biased twice, ...). With n_vocab (not 0), biased ids must be below
  // it and may not ban every token.
  Sampler(const SamplerParams& params, uint64_t seed, size_t n_vocab = 0);

  // history: the conversation's ids so far (the penalty looks at its last repeat_last_n).
  // allowed: empty, or one flag per logit; tokens flagged 0 are never drawn (a reply's format).
  // NaN logits count as -inf; none finite at all (among the allowed) throws Error(bad_model),
  // and allowed tokens all banned by the biases Error(invalid_argument). Greedy draws nothing
  // from the generator, any other call exactly one uniform, so same seed + same calls = same ids.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 std::span<const uint8_t> allowed = {});

 private:
  SamplerParams params_;
  Rng rng_;
  // Reused across calls so that sampling allocates nothing once warmed up.
  std::vector<float> scratch_logits_;   // the logits after NaN clean-up and the penalty
  std::vector<int32_t> scratch_ids_;    // the penalty window's distinct ids
  std::vector<uint64_t> scratch_keys_;  // the candidates as rank keys (logit, then lower id)
};

}  // namespace parley::sample

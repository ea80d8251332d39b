#include "sample/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "common/shown_number.h"

namespace parley::sample {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Only a -inf bias bans a token: a finite logit that a large finite bias or the penalty
// pushes below the float range stays the lowest finite value, still a candidate.
float kept_finite(float x) { return std::max(x, std::numeric_limits<float>::lowest()); }

// The first candidates examined when the sorted prefix has to grow (then it doubles).
constexpr size_t kFirstSortedChunk = 64;

template <typename T>
void require_param(bool ok, const char* name, const char* rule, T value) {
  if (ok) return;
  std::ostringstream message;
  message << "sampler: " << name << " must be " << rule << " (got ";
  if constexpr (std::is_floating_point_v<T>) {
    message << shown_float(value);
  } else {
    message << value;
  }
  message << ")";
  fail(Status::invalid_argument, message.str());
}

// Comparisons are written so that NaN fails them (a NaN never passes as "in range").
void validate(const SamplerParams& p) {
  require_param(std::isfinite(p.temperature) && p.temperature >= 0.0f, "temperature",
                "finite and >= 0", p.temperature);
  require_param(p.top_k >= 0, "top_k", ">= 0 (0 = off)", p.top_k);
  require_param(p.top_p > 0.0f && p.top_p <= 1.0f, "top_p", "in (0, 1] (1 = off)", p.top_p);
  require_param(p.min_p >= 0.0f && p.min_p <= 1.0f, "min_p", "in [0, 1] (0 = off)", p.min_p);
  require_param(std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0.0f, "repeat_penalty",
                "finite and > 0 (1 = off)", p.repeat_penalty);
}

void validate_bias(const std::vector<TokenBias>& biases, size_t n_vocab) {
  std::vector<int32_t> ids;
  ids.reserve(biases.size());
  size_t banned = 0;
  for (const TokenBias& b : biases) {
    require_param(b.token >= 0, "a logit_bias token", ">= 0", b.token);
    if (n_vocab > 0 && static_cast<size_t>(b.token) >= n_vocab) {
      require_param(false, "a logit_bias token",
                    ("below the vocabulary's " + std::to_string(n_vocab)).c_str(), b.token);
    }
    require_param(!std::isnan(b.bias) && b.bias != -kNegInf, "a logit_bias bias",
                  "finite or -inf", b.bias);
    banned += b.bias == kNegInf;
    ids.push_back(b.token);
  }
  std::sort(ids.begin(), ids.end());
  const auto twice = std::adjacent_find(ids.begin(), ids.end());
  if (twice != ids.end()) {
    fail(Status::invalid_argument,
         "sampler: logit_bias lists token " + std::to_string(*twice) + " twice");
  }
  require(n_vocab == 0 || banned < n_vocab, Status::invalid_argument,
          "sampler: logit_bias bans every token of the vocabulary");
}

// CTRL / llama.cpp rule: dividing a negative logit would raise it, so negatives are
// multiplied instead; either way a penalty > 1 makes the token less likely. Each distinct id
// is penalised once, however often it occurs in the window.
void apply_repeat_penalty(std::vector<float>& logits, std::span<const int32_t> history,
                          const SamplerParams& p, std::vector<int32_t>& window) {
  const size_t n = std::min<size_t>(p.repeat_last_n, history.size());
  window.clear();
  for (int32_t id : history.last(n)) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) window.push_back(id);
  }
  std::sort(window.begin(), window.end());
  window.erase(std::unique(window.begin(), window.end()), window.end());
  for (int32_t id : window) {
    float& logit = logits[static_cast<size_t>(id)];
    if (logit > 0.0f) {
      logit /= p.repeat_penalty;
    } else if (logit != kNegInf) {
      logit = kept_finite(logit * p.repeat_penalty);
    }
  }
}

// Orders candidates by logit, then by lower id, as one integer: the float's bits mapped so
// that unsigned order is numeric order (negatives flipped whole, positives get the sign bit
// set) in the high half, the complemented id in the low half. Higher key = better candidate.
// Branch-free, since the sign of a logit is a coin flip to the branch predictor.
uint64_t rank_key(float logit, uint32_t id) {
  logit += 0.0f;  // -0.0 + 0.0 = +0.0: the two zeros compare equal, so they must rank equal
  const uint32_t bits = std::bit_cast<uint32_t>(logit);
  const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u;
  return (static_cast<uint64_t>(bits ^ flip) << 32) | ~id;
}

int32_t id_of(uint64_t key) { return static_cast<int32_t>(~static_cast<uint32_t>(key)); }

// Moves the best keys of keys[from..] into keys[from..upto) in descending order; returns how
// long the sorted prefix now is. A small chunk: partial_sort (a heap of the chunk, one pass).
// A large one: nth_element (linear) and a sort of the chunk alone. Most of what is left: sort
// all of it.
size_t sort_best(std::vector<uint64_t>& keys, size_t from, size_t upto) {
  constexpr size_t kHeapLimit = 128;
  const auto first = keys.begin() + static_cast<ptrdiff_t>(from);
  const auto middle = keys.begin() + static_cast<ptrdiff_t>(upto);
  const std::greater<uint64_t> better;
  if ((upto - from) * 4 >= keys.size() - from) {
    std::sort(first, keys.end(), better);
    return keys.size();
  }
  if (upto - from <= kHeapLimit) {
    std::partial_sort(first, middle, keys.end(), better);
  } else {
    std::nth_element(first, middle - 1, keys.end(), better);
    std::sort(first, middle, better);
  }
  return upto;
}

}  // namespace

Sampler::Sampler(const SamplerParams& params, uint64_t seed, size_t n_vocab)
    : params_(params), rng_(seed) {
  validate(params_);
  validate_bias(params_.logit_bias, n_vocab);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const uint8_t> allowed) {
  require(!logits.empty(), Status::internal, "sampler: empty logits");
  require(allowed.empty() || allowed.size() == logits.size(), Status::internal,
          "sampler: the allowed tokens do not match the logits");
  require(logits.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
          Status::internal, "sampler: more logits than int32 token ids");

  std::vector<float>& l = scratch_logits_;
  l.assign(logits.begin(), logits.end());
  // NaN would break every comparison below; a NaN logit means "impossible", like -inf, and
  // so does a token the reply's format does not allow.
  if (allowed.empty()) {
    for (float& x : l) {
      if (std::isnan(x)) x = kNegInf;
    }
  } else {
    bool any = false;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!allowed[i] || std::isnan(l[i])) l[i] = kNegInf;
      any = any || l[i] != kNegInf;
    }
    require(any, Status::bad_model, kNanLogitsMessage);
  }
  for (const TokenBias& b : params_.logit_bias) {
    require(static_cast<size_t>(b.token) < l.size(), Status::internal,
            "sampler: a logit_bias token is outside the logits");
    float& x = l[static_cast<size_t>(b.token)];
    if (b.bias == kNegInf) {
      x = kNegInf;  // banned even where the logit is +inf
    } else if (x != kNegInf) {  // (a NaN logit, made -inf above, stays out)
      x = kept_finite(x + b.bias);
    }
  }
  if (params_.repeat_penalty != 1.0f) apply_repeat_penalty(l, history, params_, scratch_ids_);

  // The argmax with the lowest id on ties (strict >), as llama2.c's greedy decoding does.
  size_t best = 0;
  for (size_t i = 1; i < l.size(); ++i) {
    if (l[i] > l[best]) best = i;
  }
  // Biases may not ban every token (checked by the API): no finite logit left is the model's,
  // unless the allowed tokens are all banned.
  if (l[best] == kNegInf && !allowed.empty() && !params_.logit_bias.empty()) {
    fail(Status::invalid_argument,
         "logit_bias bans every token the reply's format allows at this point of the reply");
  }
  require(l[best] != kNegInf, Status::bad_model, kNanLogitsMessage);
  if (params_.temperature == 0.0f) return static_cast<int32_t>(best);

  // Weights are softmax(l / T) up to the common factor 1/Z, with the max subtracted before
  // dividing by T so that a tiny T cannot overflow. The max itself weighs exactly 1 (this also
  // keeps a +inf max from turning into inf - inf = NaN: it wins, finite logits weigh 0).
  const double lmax = l[best];
  const double temperature = params_.temperature;
  auto weight = [&](int32_t id) {
    const double x = l[static_cast<size_t>(id)];
    return x == lmax ? 1.0 : std::exp((x - lmax) / temperature);
  };
  // Candidates are ranked by one integer key (see rank_key): comparing plain uint64 values
  // is several times faster than comparing through an index into the logits.
  // -inf candidates are skipped without a branch: written, then overwritten.
  std::vector<uint64_t>& keys = scratch_keys_;
  keys.resize(l.size());
  size_t n_candidates = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    keys[n_candidates] = rank_key(l[i], static_cast<uint32_t>(i));
    n_candidates += l[i] != kNegInf;
  }
  keys.resize(n_candidates);

  // top-k: the k best, already in order. n_sorted tracks how long the sorted prefix is.
  size_t n_sorted = 0;
  const size_t k = static_cast<size_t>(params_.top_k);
  if (k > 0 && k < keys.size()) {
    n_sorted = std::min(sort_best(keys, 0, k), k);
    keys.resize(k);
  }

  // One pass: z_topk normalises the top-k distribution (top-p is measured against it), and
  // min-p is applied at once. p < min_p * p_max is w / Z < min_p * 1 / Z, i.e. w < min_p:
  // no normaliser needed. min-p keeps a prefix of the sorted order, and so does top-p, so
  // applying min-p first and cutting top-p inside what is left gives the same set as the
  // pipeline order. Weight-0 candidates (underflow) could never be drawn and are dropped.
  const double min_p = params_.min_p;
  double z_topk = 0.0;
  double z_kept = 0.0;
  size_t n_kept = 0;
  for (uint64_t key : keys) {
    const double w = weight(id_of(key));
    z_topk += w;
    if (w > 0.0 && w >= min_p) {
      keys[n_kept++] = key;  // in place and in order: a sorted prefix stays sorted
      z_kept += w;
    }
  }
  keys.resize(n_kept);  // never empty: the max weighs 1 and min_p <= 1
  n_sorted = std::min(n_sorted, n_kept);

  // The sorted prefix grows only as far as the walks below reach, so a large vocabulary with
  // top-k off is not sorted in full when a few candidates hold the mass.
  auto sorted_id = [&](size_t index) {
    if (index >= n_sorted) {
      const size_t upto =
          std::min(keys.size(), std::max({index + 1, 2 * n_sorted, kFirstSortedChunk}));
      n_sorted = sort_best(keys, n_sorted, upto);
    }
    return id_of(keys[index]);
  };

  // top-p: the shortest sorted prefix whose top-k probability reaches top_p (at least one).
  size_t n_final = keys.size();
  double z_final = z_kept;
  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * z_topk;
    double cumulative = 0.0;
    for (size_t i = 0; i < keys.size(); ++i) {
      cumulative += weight(sorted_id(i));
      if (cumulative >= target) {
        n_final = i + 1;
        break;
      }
    }
    z_final = cumulative;
  }

  // The draw: one uniform per sampled token, walked over the renormalised survivors in
  // sorted order. Rounding can leave the target at or past the last partial sum; the last
  // survivor takes that sliver.
  const double target = rng_.uniform() * z_final;
  double cumulative = 0.0;
  for (size_t i = 0; i < n_final; ++i) {
    const int32_t id = sorted_id(i);
    cumulative += weight(id);
    if (target < cumulative) return id;
  }
  return sorted_id(n_final - 1);
}

}  // namespace parley::sample

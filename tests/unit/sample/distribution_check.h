// Reference probabilities computed straight from the textbook formulas in double, and a check
// that a sampler's draw frequencies match them.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "sample/sampler.h"

namespace parley::sample_test {

// softmax(logits / T); -inf logits get probability 0.
inline std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double max = -INFINITY;
  for (float x : logits) max = std::max(max, static_cast<double>(x));
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp((logits[i] - max) / temperature);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

// Token ids by decreasing probability, lower id first on ties.
inline std::vector<size_t> by_probability(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  return order;
}

// Zeroes the tokens not in `keep` and rescales the rest to sum to 1.
inline std::vector<double> restrict_to(const std::vector<double>& p,
                                       const std::vector<bool>& keep) {
  std::vector<double> q(p.size(), 0.0);
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (keep[i]) sum += p[i];
  }
  for (size_t i = 0; i < p.size(); ++i) {
    if (keep[i]) q[i] = p[i] / sum;
  }
  return q;
}

inline std::vector<int> draw_counts(sample::Sampler& sampler, const std::vector<float>& logits,
                                    int n_draws, std::span<const int32_t> history = {},
                                    std::span<const uint8_t> allowed = {}) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n_draws; ++i) {
    const int32_t id = sampler.sample(logits, history, allowed);
    REQUIRE(id >= 0);
    REQUIRE(static_cast<size_t>(id) < logits.size());
    ++counts[static_cast<size_t>(id)];
  }
  return counts;
}

// Probability-0 tokens must never appear. Every other count is binomial(n, p): it must lie
// within 5 standard deviations of n * p (a false alarm has odds of about 1 in 1.7 million
// per token).
inline void check_frequencies(const std::vector<int>& counts, const std::vector<double>& p,
                              int n_draws) {
  REQUIRE(counts.size() == p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    CAPTURE(i);
    CAPTURE(p[i]);
    CAPTURE(counts[i]);
    if (p[i] == 0.0) {
      CHECK(counts[i] == 0);
      continue;
    }
    const double mean = n_draws * p[i];
    const double sd = std::sqrt(n_draws * p[i] * (1.0 - p[i]));
    CHECK(std::abs(counts[i] - mean) <= 5.0 * sd);
  }
}

// Parameters that switch every filter off: only temperature acts.
inline sample::SamplerParams plain_params(float temperature) {
  sample::SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  return p;
}

}  // namespace parley::sample_test

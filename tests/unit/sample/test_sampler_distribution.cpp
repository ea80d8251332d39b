// Draw frequencies against probabilities computed independently from the logits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "distribution_check.h"
#include "sample/sampler.h"

using parley::sample::Sampler;
using parley::sample::SamplerParams;
using namespace parley::sample_test;

namespace {

constexpr int kDraws = 20000;

// n distinct logits in no obvious order (a fixed formula, so the test needs no RNG).
std::vector<float> scrambled_logits(size_t n) {
  std::vector<float> logits(n);
  for (size_t i = 0; i < n; ++i) logits[i] = static_cast<float>(3.0 * std::sin(1.7 * i + 0.3));
  return logits;
}

}  // namespace

TEST_CASE("temperature: frequencies match softmax(logits / T)") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f};
  for (float temperature : {0.5f, 1.0f, 2.0f}) {
    CAPTURE(temperature);
    Sampler sampler(plain_params(temperature), 1000 + static_cast<uint64_t>(temperature * 10));
    check_frequencies(draw_counts(sampler, logits, kDraws), softmax(logits, temperature),
                      kDraws);
  }
}

TEST_CASE("top_k: only the k best ever appear, in softmax proportion") {
  const std::vector<float> logits = scrambled_logits(50);
  const std::vector<double> p = softmax(logits, 1.5);
  const std::vector<size_t> order = by_probability(p);
  std::vector<bool> keep(p.size(), false);
  for (size_t i = 0; i < 5; ++i) keep[order[i]] = true;

  SamplerParams params = plain_params(1.5f);
  params.top_k = 5;
  Sampler sampler(params, 77);
  check_frequencies(draw_counts(sampler, logits, kDraws), restrict_to(p, keep), kDraws);
}

TEST_CASE("top_k: a tie at the boundary keeps the lower ids") {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f};
  SamplerParams params = plain_params(1.0f);
  params.top_k = 2;
  Sampler sampler(params, 5);
  check_frequencies(draw_counts(sampler, logits, kDraws), {0.0, 0.5, 0.5, 0.0, 0.0}, kDraws);
}

TEST_CASE("top_p: only the nucleus appears, renormalised") {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 3.0f, -1.0f, 0.0f, 1.5f, -2.0f};
  const float top_p = 0.8f;
  const std::vector<double> p = softmax(logits, 1.0);
  const std::vector<size_t> order = by_probability(p);
  std::vector<bool> keep(p.size(), false);
  double cumulative = 0.0;
  size_t nucleus = 0;
  for (size_t id : order) {
    // No partial sum may sit near top_p, or float rounding could decide the cut.
    REQUIRE(std::abs(cumulative - top_p) > 1e-3);
    keep[id] = true;
    ++nucleus;
    cumulative += p[id];
    if (cumulative >= top_p) break;
  }
  REQUIRE(nucleus >= 2);  // the case must cut inside the distribution to mean anything
  REQUIRE(nucleus < logits.size() - 1);

  SamplerParams params = plain_params(1.0f);
  params.top_p = top_p;
  Sampler sampler(params, 31);
  check_frequencies(draw_counts(sampler, logits, kDraws), restrict_to(p, keep), kDraws);
}

TEST_CASE("top_p: a tiny nucleus still keeps the best token") {
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f};
  SamplerParams params = plain_params(1.0f);
  params.top_p = 1e-6f;
  Sampler sampler(params, 8);
  for (int i = 0; i < 200; ++i) CHECK(sampler.sample(logits, {}) == 1);
}

TEST_CASE("min_p: exactly the tokens below min_p * p_max are removed") {
  // Probability ratios to the best token: 1, 0.5, 0.12, 0.08, 0.3, 0.02.
  const std::vector<float> logits = {
      0.0f, std::log(0.5f), std::log(0.12f), std::log(0.08f), std::log(0.3f), std::log(0.02f)};
  const float min_p = 0.1f;
  // At T = 2 the ratios become their square roots: every one is then above 0.1.
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    CAPTURE(temperature);
    const std::vector<double> p = softmax(logits, temperature);
    const double p_max = *std::max_element(p.begin(), p.end());
    std::vector<bool> keep(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      REQUIRE(std::abs(p[i] / p_max - min_p) > 1e-3);  // nothing on the threshold
      keep[i] = p[i] >= min_p * p_max;
    }
    SamplerParams params = plain_params(temperature);
    params.min_p = min_p;
    Sampler sampler(params, 99);
    check_frequencies(draw_counts(sampler, logits, kDraws), restrict_to(p, keep), kDraws);
  }
}

TEST_CASE("all stages together: penalty, temperature, top-k, top-p, min-p") {
  // Chosen so that every stage removes something: the penalty demotes id 0, top-k drops ids
  // ranked 7th and below, top-p cuts after the 5th, min-p then drops the 5th (ratio ~0.09).
  const std::vector<float> logits = {4.0f, 1.0f, 3.5f, 0.5f, 3.0f, 2.2f, -1.0f,
                                     2.8f, 0.0f, 1.5f, 2.0f, 3.9f, -0.5f};
  const std::vector<int32_t> history = {11, 12, 7, 0, 0};
  SamplerParams params;
  params.temperature = 0.7f;
  params.top_k = 6;
  params.top_p = 0.95f;
  params.min_p = 0.1f;
  params.repeat_penalty = 1.3f;
  params.repeat_last_n = 4;  // the window is {12, 7, 0, 0}: id 11 is just outside it

  // The reference, stage by stage, the slow obvious way.
  std::vector<float> penalised = logits;
  for (size_t id : {12, 7, 0}) {
    penalised[id] = penalised[id] > 0 ? penalised[id] / 1.3f : penalised[id] * 1.3f;
  }
  std::vector<double> p = softmax(penalised, 0.7);
  const std::vector<size_t> order = by_probability(p);
  std::vector<bool> keep(p.size(), false);
  for (size_t i = 0; i < 6; ++i) keep[order[i]] = true;
  p = restrict_to(p, keep);  // top-k
  std::vector<bool> nucleus(p.size(), false);
  double cumulative = 0.0;
  for (size_t id : order) {
    REQUIRE(std::abs(cumulative - 0.95) > 1e-3);
    nucleus[id] = true;
    cumulative += p[id];
    if (cumulative >= 0.95) break;
  }
  p = restrict_to(p, nucleus);  // top-p
  const double p_max = p[order[0]];
  for (size_t id = 0; id < p.size(); ++id) {
    if (p[id] > 0.0) REQUIRE(std::abs(p[id] / p_max - 0.1) > 1e-3);
    keep[id] = p[id] >= 0.1 * p_max;
  }
  p = restrict_to(p, keep);  // min-p
  // The stages did cut as intended: 4 survivors, and id 11 (outside the window) leads.
  CHECK(std::count_if(p.begin(), p.end(), [](double x) { return x > 0.0; }) == 4);
  CHECK(order[0] == 11);

  Sampler sampler(params, 2024);
  check_frequencies(draw_counts(sampler, logits, kDraws, history), p, kDraws);
}

TEST_CASE("the draw walks the cumulative sum in sorted order") {
  // Sorted, the probabilities are 0.5 (id 2), 0.3 (id 0), 0.2 (id 1): cumulative 0.5, 0.8, 1.
  // Rng(42)'s first uniforms, from the Python reference of test_rng.cpp, are 0.0839, 0.3790,
  // 0.6800, 0.9247, 0.9918, none near a boundary, so the ids are 2, 2, 0, 1, 1.
  const std::vector<float> logits = {std::log(0.3f), std::log(0.2f), std::log(0.5f)};
  Sampler sampler(plain_params(1.0f), 42);
  for (int32_t expected : {2, 2, 0, 1, 1}) CHECK(sampler.sample(logits, {}) == expected);
}

TEST_CASE("the repetition penalty shifts the sampled distribution") {
  // Logits {2, 1, 0} with id 0 penalised by 2 become {1, 1, 0}.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  const std::vector<int32_t> history = {0};
  SamplerParams params = plain_params(1.0f);
  params.repeat_penalty = 2.0f;
  Sampler sampler(params, 6);
  check_frequencies(draw_counts(sampler, logits, kDraws, history),
                    softmax({1.0f, 1.0f, 0.0f}, 1.0), kDraws);
}

TEST_CASE("large vocabularies: every draw lies in the nucleus") {
  // 150000 logits, a handful well above a flat floor: with top-k off, top-p must still cut
  // at the few that hold the mass.
  std::vector<float> logits(150000, -4.0f);
  const std::vector<size_t> peaks = {149999, 17, 80000, 4242};
  for (size_t i = 0; i < peaks.size(); ++i) logits[peaks[i]] = 12.0f - static_cast<float>(i);
  const std::vector<double> p = softmax(logits, 1.0);
  double peak_mass = 0.0;
  for (size_t id : peaks) peak_mass += p[id];
  REQUIRE(peak_mass > 0.95);  // so a 0.9 nucleus lies inside the peaks

  SamplerParams params = plain_params(1.0f);
  params.top_p = 0.9f;
  Sampler sampler(params, 3);
  for (int i = 0; i < 300; ++i) {
    const int32_t id = sampler.sample(logits, {});
    CHECK(std::find(peaks.begin(), peaks.end(), static_cast<size_t>(id)) != peaks.end());
  }
}

namespace {

// For candidate sets of thousands, per-token counts say little; the draws are checked instead
// to lie in the kept set, and the kept set, in order of probability, is cut into buckets whose
// draw counts must match the buckets' total probability (5 sigma, as above).
void check_ranked_buckets(const std::vector<int>& counts, const std::vector<double>& p,
                          const std::vector<size_t>& order, int n_draws) {
  size_t n_kept = 0;
  for (size_t id = 0; id < p.size(); ++id) {
    if (p[id] == 0.0) {
      CHECK(counts[id] == 0);
    } else {
      ++n_kept;
    }
  }
  constexpr size_t kBuckets = 10;
  std::vector<double> bucket_p(kBuckets, 0.0);
  std::vector<int> bucket_counts(kBuckets, 0);
  for (size_t rank = 0; rank < n_kept; ++rank) {
    const size_t bucket = rank * kBuckets / n_kept;
    bucket_p[bucket] += p[order[rank]];
    bucket_counts[bucket] += counts[order[rank]];
  }
  check_frequencies(bucket_counts, bucket_p, n_draws);
}

}  // namespace

// 8000 logits in [-4, 4]: flat enough that thousands of tokens survive each filter, which
// takes the sampler through every way it has of sorting a prefix. Fewer draws than above: each
// one sorts thousands of candidates, and 10 buckets need far fewer draws than 8000 tokens.
constexpr int kBucketDraws = 2000;

std::vector<float> flat_logits() {
  std::vector<float> v(8000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(4.0 * std::sin(0.37 * i + 0.1));
  return v;
}

TEST_CASE("thousands of candidates: top-p keeps the right set, in proportion") {
  const std::vector<float> logits = flat_logits();
  const std::vector<double> p = softmax(logits, 1.0);
  const std::vector<size_t> order = by_probability(p);
  std::vector<bool> keep(p.size(), false);
  double cumulative = 0.0;
  for (size_t id : order) {
    keep[id] = true;
    const double before = cumulative;
    cumulative += p[id];
    if (cumulative >= 0.9) {
      // Both sides of the cut must be clear of 0.9 by far more than rounding.
      REQUIRE(0.9 - before > 1e-9);
      REQUIRE(cumulative - 0.9 > 1e-9);
      break;
    }
  }
  REQUIRE(std::count(keep.begin(), keep.end(), true) > 2000);

  SamplerParams params = plain_params(1.0f);
  params.top_p = 0.9f;
  Sampler sampler(params, 50);
  check_ranked_buckets(draw_counts(sampler, logits, kBucketDraws), restrict_to(p, keep), order,
                       kBucketDraws);
}

TEST_CASE("thousands of candidates: top-k keeps the right set, in proportion") {
  const std::vector<float> logits = flat_logits();
  const std::vector<double> p = softmax(logits, 1.0);
  const std::vector<size_t> order = by_probability(p);
  for (size_t k : {size_t{1500}, size_t{5000}}) {
    CAPTURE(k);
    REQUIRE(p[order[k - 1]] > p[order[k]]);  // no tie at the boundary
    std::vector<bool> keep(p.size(), false);
    for (size_t rank = 0; rank < k; ++rank) keep[order[rank]] = true;
    SamplerParams params = plain_params(1.0f);
    params.top_k = static_cast<int32_t>(k);
    Sampler sampler(params, 51);
    check_ranked_buckets(draw_counts(sampler, logits, kBucketDraws), restrict_to(p, keep),
                         order, kBucketDraws);
  }
}

TEST_CASE("logit_bias: frequencies match softmax((logits + bias) / T)") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f};
  std::vector<float> biased = logits;
  biased[4] -= 2.5f;
  biased[3] += 3.0f;
  SamplerParams params = plain_params(1.5f);
  params.logit_bias = {{4, -2.5f}, {3, 3.0f}, {0, -std::numeric_limits<float>::infinity()}};
  std::vector<double> p = softmax(biased, 1.5);
  std::vector<bool> keep(p.size(), true);
  keep[0] = false;
  Sampler sampler(params, 91);
  check_frequencies(draw_counts(sampler, logits, kDraws), restrict_to(p, keep), kDraws);
}

TEST_CASE("allowed tokens: only they appear, the pipeline applied to them alone") {
  const std::vector<float> logits = scrambled_logits(40);
  std::vector<uint8_t> allowed(logits.size(), 0);
  std::vector<float> masked(logits.size(), -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < logits.size(); i += 3) {
    allowed[i] = 1;
    masked[i] = logits[i];
  }
  // top-k and min-p rank the allowed tokens among themselves: the same as the logits with the
  // others at -inf.
  const std::vector<double> p = softmax(masked, 1.2);
  const std::vector<size_t> order = by_probability(p);
  std::vector<bool> keep(p.size(), false);
  for (size_t i = 0; i < 6; ++i) keep[order[i]] = true;
  SamplerParams params = plain_params(1.2f);
  params.top_k = 6;
  Sampler sampler(params, 31);
  check_frequencies(draw_counts(sampler, logits, kDraws, {}, allowed), restrict_to(p, keep),
                    kDraws);
  // Greedy: the best allowed token, not the best one.
  Sampler greedy(plain_params(0.0f), 1);
  CHECK(greedy.sample(logits, {}, allowed) == int32_t(order[0]));
}

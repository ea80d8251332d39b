// Parameter checks, greedy decoding, determinism, the repetition penalty and bad logits.
// (Frequency tests live in test_sampler_distribution.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribution_check.h"
#include "sample/sampler.h"

using parley::Error;
using parley::Status;
using parley::sample::Sampler;
using parley::sample::SamplerParams;
using parley::sample_test::plain_params;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

SamplerParams greedy_params() {
  SamplerParams p;
  p.temperature = 0.0f;
  return p;
}

// The status and message of the Error that constructing a Sampler throws.
void check_rejected(const SamplerParams& params, const std::string& name) {
  try {
    Sampler sampler(params, 1);
    FAIL("accepted an invalid " << name);
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
}

Status status_of_sample(Sampler& sampler, const std::vector<float>& logits,
                        const std::vector<uint8_t>& allowed = {}) {
  try {
    sampler.sample(logits, {}, allowed);
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

}  // namespace

TEST_CASE("out-of-range parameters are rejected with a message naming them") {
  auto with = [](auto set) {
    SamplerParams p;
    set(p);
    return p;
  };
  check_rejected(with([](SamplerParams& p) { p.temperature = -0.1f; }), "temperature");
  check_rejected(with([](SamplerParams& p) { p.temperature = kNaN; }), "temperature");
  check_rejected(with([](SamplerParams& p) { p.temperature = kInf; }), "temperature");
  check_rejected(with([](SamplerParams& p) { p.top_k = -1; }), "top_k");
  check_rejected(with([](SamplerParams& p) { p.top_p = 0.0f; }), "top_p");
  check_rejected(with([](SamplerParams& p) { p.top_p = 1.0001f; }), "top_p");
  check_rejected(with([](SamplerParams& p) { p.top_p = kNaN; }), "top_p");
  check_rejected(with([](SamplerParams& p) { p.min_p = -0.01f; }), "min_p");
  check_rejected(with([](SamplerParams& p) { p.min_p = 1.01f; }), "min_p");
  check_rejected(with([](SamplerParams& p) { p.min_p = kNaN; }), "min_p");
  check_rejected(with([](SamplerParams& p) { p.repeat_penalty = 0.0f; }), "repeat_penalty");
  check_rejected(with([](SamplerParams& p) { p.repeat_penalty = -1.2f; }), "repeat_penalty");
  check_rejected(with([](SamplerParams& p) { p.repeat_penalty = kInf; }), "repeat_penalty");
  check_rejected(with([](SamplerParams& p) { p.repeat_penalty = kNaN; }), "repeat_penalty");
}

TEST_CASE("the edges of every range are accepted") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 0.5f;  // < 1 is allowed: it favours repeats
  p.repeat_last_n = 0;
  CHECK_NOTHROW(Sampler(p, 0));
  p.min_p = 1.0f;
  p.top_p = 1e-6f;
  CHECK_NOTHROW(Sampler(p, 0));
  CHECK_NOTHROW(Sampler(SamplerParams{}, 0));  // the documented defaults
}

TEST_CASE("greedy picks the argmax, the lowest id on ties, whatever the seed") {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 3.25f, 3.25f, 1.0f};
  Sampler a(greedy_params(), 1), b(greedy_params(), 999);
  for (int i = 0; i < 10; ++i) {
    CHECK(a.sample(logits, {}) == 3);
    CHECK(b.sample(logits, {}) == 3);
  }
  const std::vector<float> all_equal(7, -2.0f);
  CHECK(a.sample(all_equal, {}) == 0);
  const std::vector<float> last_wins = {-5.0f, -4.0f, -3.0f};
  CHECK(a.sample(last_wins, {}) == 2);
}

TEST_CASE("top_k = 1 is greedy at any temperature") {
  const std::vector<float> logits = {0.1f, 0.7f, 0.2f, 0.7f, 0.69f};
  for (float temperature : {0.3f, 1.0f, 5.0f, 100.0f}) {
    SamplerParams params = plain_params(temperature);
    params.top_k = 1;
    Sampler sampler(params, 17);
    for (int i = 0; i < 200; ++i) CHECK(sampler.sample(logits, {}) == 1);
    // -0.0 and +0.0 compare equal, so the lower id wins whichever zero it holds.
    CHECK(sampler.sample(std::vector<float>{-1.0f, -0.0f, 0.0f}, {}) == 1);
    CHECK(sampler.sample(std::vector<float>{-1.0f, 0.0f, -0.0f}, {}) == 1);
    CHECK(sampler.sample(std::vector<float>{-3.0f, -1.0f, -2.0f}, {}) == 1);
  }
}

TEST_CASE("the same seed and inputs give the same draws; another seed differs") {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 0.01f * static_cast<float>(i % 7);
  const std::vector<int32_t> history = {3, 5, 7};
  SamplerParams params = plain_params(1.0f);
  params.repeat_penalty = 1.1f;
  Sampler a(params, 123), b(params, 123), c(params, 124);
  bool c_differs = false;
  for (int i = 0; i < 500; ++i) {
    const int32_t x = a.sample(logits, history);
    CHECK(x == b.sample(logits, history));
    if (x != c.sample(logits, history)) c_differs = true;
  }
  CHECK(c_differs);
}

TEST_CASE("repetition penalty: a positive logit is divided and can lose the argmax") {
  const std::vector<float> logits = {2.0f, 1.9f, 0.0f};
  SamplerParams params = greedy_params();
  params.repeat_penalty = 1.2f;  // 2.0 / 1.2 = 1.67 < 1.9
  Sampler sampler(params, 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{}) == 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{0}) == 1);
}

TEST_CASE("repetition penalty: a negative logit is multiplied, so it still drops") {
  // Dividing -1.0 by 1.2 would raise it to -0.83 and keep id 0 ahead; multiplying gives -1.2.
  const std::vector<float> logits = {-1.0f, -1.1f};
  SamplerParams params = greedy_params();
  params.repeat_penalty = 1.2f;
  Sampler sampler(params, 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{0}) == 1);
  // A zero logit is neither: it stays 0 and still beats -0.1.
  CHECK(sampler.sample(std::vector<float>{0.0f, -0.1f}, std::vector<int32_t>{0}) == 0);
}

TEST_CASE("repetition penalty: only the last repeat_last_n ids count") {
  const std::vector<float> logits = {2.0f, 1.9f, 0.0f};
  SamplerParams params = greedy_params();
  params.repeat_penalty = 1.2f;
  params.repeat_last_n = 3;
  Sampler sampler(params, 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{0, 2, 2, 2}) == 0);  // 0 just outside
  CHECK(sampler.sample(logits, std::vector<int32_t>{2, 0, 2, 2}) == 1);  // 0 just inside
  params.repeat_last_n = 0;  // an empty window: no penalty at all
  Sampler no_window(params, 0);
  CHECK(no_window.sample(logits, std::vector<int32_t>{0, 0, 0}) == 0);
}

TEST_CASE("repetition penalty: an id is penalised once, however often it repeats") {
  // Once: 2.0 / 1.2 = 1.67 > 1.5. Three times would give 2.0 / 1.728 = 1.16 < 1.5.
  const std::vector<float> logits = {2.0f, 1.5f};
  SamplerParams params = greedy_params();
  params.repeat_penalty = 1.2f;
  Sampler sampler(params, 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{0, 0, 0}) == 0);
}

TEST_CASE("repetition penalty: ids outside the vocabulary are ignored") {
  const std::vector<float> logits = {2.0f, 1.9f};
  SamplerParams params = greedy_params();
  params.repeat_penalty = 1.2f;
  Sampler sampler(params, 0);
  CHECK(sampler.sample(logits, std::vector<int32_t>{-1, 2, 1000000,
                                                   std::numeric_limits<int32_t>::min()}) == 0);
}

TEST_CASE("NaN logits count as -inf: never chosen") {
  const std::vector<float> logits = {kNaN, 1.0f, kNaN, 0.5f, -kInf, kNaN};
  Sampler greedy(greedy_params(), 0);
  CHECK(greedy.sample(logits, {}) == 1);
  SamplerParams params = plain_params(1.0f);
  Sampler sampler(params, 4);
  for (int i = 0; i < 2000; ++i) {
    const int32_t id = sampler.sample(logits, {});
    CHECK((id == 1 || id == 3));
  }
  // NaN first must not poison the argmax either.
  CHECK(greedy.sample(std::vector<float>{kNaN, -3.0f, -2.0f}, {}) == 2);
}

TEST_CASE("a +inf logit wins outright") {
  const std::vector<float> logits = {1.0f, kInf, 50.0f};
  Sampler greedy(greedy_params(), 0);
  CHECK(greedy.sample(logits, {}) == 1);
  Sampler sampler(plain_params(1.0f), 4);
  for (int i = 0; i < 100; ++i) CHECK(sampler.sample(logits, {}) == 1);
}

TEST_CASE("logits with no finite value are the model's fault, for greedy and sampling") {
  // A model whose weights hold NaN computes NaN logits: its file is bad, not the library.
  const std::vector<float> dead = {kNaN, -kInf, kNaN};
  Sampler greedy(greedy_params(), 0);
  Sampler sampler(SamplerParams{}, 0);
  CHECK(status_of_sample(greedy, dead) == Status::bad_model);
  CHECK(status_of_sample(sampler, dead) == Status::bad_model);
  CHECK(status_of_sample(sampler, {}) == Status::internal);
  // The sampler stays usable afterwards.
  CHECK(sampler.sample(std::vector<float>{0.0f, 10.0f, 0.0f}, {}) == 1);
}

TEST_CASE("allowed tokens: none of them finite is the model's fault, all of them banned the "
          "caller's") {
  const std::vector<float> logits = {kNaN, 2.0f, kNaN, 1.0f};
  const std::vector<uint8_t> nan_only = {1, 0, 1, 0};
  Sampler greedy(greedy_params(), 0);
  Sampler sampler(SamplerParams{}, 0);
  CHECK(status_of_sample(greedy, logits, nan_only) == Status::bad_model);
  CHECK(status_of_sample(sampler, logits, nan_only) == Status::bad_model);
  CHECK(status_of_sample(sampler, logits, {1, 1}) == Status::internal);  // not one per logit
  SamplerParams banning = greedy_params();
  banning.logit_bias = {{3, -kInf}};
  Sampler banned(banning, 0, logits.size());
  CHECK(status_of_sample(banned, logits, {0, 0, 1, 1}) == Status::invalid_argument);
  CHECK(banned.sample(logits, {}, std::vector<uint8_t>{0, 1, 1, 1}) == 1);
  // A bias lifts an allowed token only: a banned-by-format one stays out whatever its bias.
  SamplerParams lifting = greedy_params();
  lifting.logit_bias = {{1, 100.0f}};
  Sampler lifted(lifting, 0, logits.size());
  CHECK(lifted.sample(logits, {}, std::vector<uint8_t>{0, 0, 1, 1}) == 3);
}

TEST_CASE("extreme temperatures stay finite") {
  const std::vector<float> logits = {30.0f, 29.0f, -30.0f};
  // A denormal temperature: (l - max) / T is -inf for every non-max, so only the max remains.
  Sampler cold(plain_params(1e-42f), 2);
  for (int i = 0; i < 100; ++i) CHECK(cold.sample(logits, {}) == 0);
  // A huge temperature: all three become (nearly) equally likely; each must appear.
  Sampler hot(plain_params(1e30f), 2);
  std::vector<int> seen(3, 0);
  for (int i = 0; i < 300; ++i) ++seen[static_cast<size_t>(hot.sample(logits, {}))];
  for (int count : seen) CHECK(count > 0);
}

TEST_CASE("the defaults keep draws among the 40 best of a 32000-token vocabulary") {
  std::vector<float> logits(32000);
  for (size_t i = 0; i < logits.size(); ++i) {
    logits[i] = static_cast<float>(std::fmod(i * 0.618033988749, 1.0) * 8.0);
  }
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const float fortieth = sorted[39];
  REQUIRE(sorted[40] < fortieth);  // no tie at the boundary for this formula
  Sampler sampler(SamplerParams{}, 11);
  for (int i = 0; i < 200; ++i) {
    CHECK(logits[static_cast<size_t>(sampler.sample(logits, {}))] >= fortieth);
  }
}

TEST_CASE("logit_bias: greedy picks the argmax of the biased logits; -inf bans a token") {
  const std::vector<float> logits = {1.0f, 4.0f, 3.5f, -2.0f};
  SamplerParams p = greedy_params();
  p.logit_bias = {{1, -1.0f}};  // 3.0 < 3.5
  CHECK(Sampler(p, 0).sample(logits, {}) == 2);
  p.logit_bias = {{3, 7.0f}};  // 5.0 > 4.0
  CHECK(Sampler(p, 0).sample(logits, {}) == 3);
  p.logit_bias = {{1, -kInf}, {2, -kInf}};
  CHECK(Sampler(p, 0).sample(logits, {}) == 0);
  // Banned also where the model's logit is +inf (no inf - inf = NaN).
  p.logit_bias = {{0, -kInf}};
  CHECK(Sampler(p, 0).sample(std::vector<float>{kInf, 1.0f}, {}) == 1);
  // Before the penalty: a biased token seen in the window is penalised from its biased logit.
  p.logit_bias = {{0, 1.0f}};
  p.repeat_penalty = 2.0f;
  // (1 + 1) / 2 = 1 < 1.5; the penalty first would tie at 1 / 2 + 1 = 1.5 (the lower id).
  const std::vector<float> close = {1.0f, 1.5f};
  const std::vector<int32_t> history = {0};
  CHECK(Sampler(p, 0).sample(close, history) == 1);
  p.logit_bias = {{0, 2.0f}};  // (1 + 2) / 2 = 1.5: the tie goes to the lower id
  CHECK(Sampler(p, 0).sample(close, history) == 0);
}

TEST_CASE("logit_bias: a large finite bias and the penalty never ban a token") {
  // Every token but id 1 banned; id 1's bias and the penalty would take it past -FLT_MAX.
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f};
  for (const float temperature : {0.0f, 1.0f}) {
    CAPTURE(temperature);
    SamplerParams p = plain_params(temperature);
    p.logit_bias = {{0, -kInf}, {1, -3.0e38f}, {2, -kInf}};
    p.repeat_penalty = 1.5f;
    CHECK(Sampler(p, 0).sample(logits, std::vector<int32_t>{1}) == 1);
    p.logit_bias = {{0, -kInf}, {1, -std::numeric_limits<float>::max()}, {2, -kInf}};
    p.repeat_penalty = 1.0f;
    CHECK(Sampler(p, 0).sample(logits, {}) == 1);
  }
  // A NaN logit is out, whatever its bias.
  SamplerParams p = greedy_params();
  p.logit_bias = {{0, -kInf}, {1, 5.0f}};
  CHECK_THROWS_AS(Sampler(p, 0).sample(std::vector<float>{1.0f, kNaN}, {}), Error);
}

TEST_CASE("logit_bias: bad entries are rejected with a message") {
  SamplerParams p = greedy_params();
  p.logit_bias = {{-1, 1.0f}};
  check_rejected(p, "logit_bias token");
  p.logit_bias = {{0, kNaN}};
  check_rejected(p, "logit_bias bias");
  p.logit_bias = {{0, kInf}};
  check_rejected(p, "logit_bias bias");
  p.logit_bias = {{5, 1.0f}, {2, 0.5f}, {5, -1.0f}};
  check_rejected(p, "lists token 5 twice");

  // Against a vocabulary: ids below its size, and not every token banned.
  p.logit_bias = {{4, 1.0f}};
  CHECK_NOTHROW(Sampler(p, 0, 5));
  CHECK_THROWS_AS(Sampler(p, 0, 4), Error);
  p.logit_bias = {{0, -kInf}, {1, -kInf}, {2, -kInf}};
  CHECK_THROWS_AS(Sampler(p, 0, 3), Error);
  CHECK_NOTHROW(Sampler(p, 0, 4));
  try {
    Sampler(p, 0, 3);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("bans every token") != std::string::npos);
  }
}

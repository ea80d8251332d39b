// A model file whose weights hold a NaN (a damaged or badly converted file) loads, but every
// reply and score then fails as the model's fault: BAD_MODEL with a message saying why, never
// INTERNAL (a bug of the library's) and never a NaN score returned as a log-probability.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "parley.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley::test;

namespace {

// An engine on `weights` written as a GGUF file in `tmp`, and a raw session of it.
struct NanModel {
  parley_engine* engine = nullptr;
  parley_session* session = nullptr;

  NanModel(const TempDir& tmp, const SynthSpec& spec, const SynthWeights& weights) {
    const std::string path = (tmp / "model.gguf").string();
    write_gguf(spec, weights, make_spm_vocab(spec.n_vocab), path);
    engine = open_engine(path, PARLEY_KV_F32);
    REQUIRE(engine != nullptr);
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = "raw";
    REQUIRE(parley_session_create(engine, &so, &session) == PARLEY_OK);
  }
  ~NanModel() {
    parley_session_close(session);
    parley_engine_close(engine);
  }
  NanModel(const NanModel&) = delete;
  NanModel& operator=(const NanModel&) = delete;
};

}  // namespace

TEST_CASE("a NaN weight: replies and scores are BAD_MODEL naming the weights") {
  TempDir tmp;
  const SynthSpec spec;
  SynthWeights weights = make_synth_weights(spec);
  weights.output_norm[3] = std::numeric_limits<float>::quiet_NaN();  // reaches every logit
  const NanModel m(tmp, spec, weights);
  parley_session* s = m.session;
  for (const float temperature : {0.0f, 1.0f}) {
    CAPTURE(temperature);
    parley_generate_options g;
    parley_generate_options_init(&g);
    g.temperature = temperature;
    g.max_tokens = 4;
    CHECK(parley_session_send(s, "ab cd", &g, nullptr, nullptr, nullptr) == PARLEY_E_BAD_MODEL);
    CHECK(std::string(parley_last_error()).find("NaN") != std::string::npos);
  }
  const char* const replies[] = {"ab"};
  double logprob = 0;
  CHECK(parley_session_score_replies(s, "cd", replies, 1, 0, &logprob, nullptr) ==
        PARLEY_E_BAD_MODEL);
  CHECK(std::string(parley_last_error()).find("NaN") != std::string::npos);
}

TEST_CASE("a NaN in one token's output row: that token is impossible, the rest goes on") {
  TempDir tmp;
  SynthSpec spec;
  spec.tied = false;
  SynthWeights weights = make_synth_weights(spec);
  const int32_t broken = 300;
  weights.output[size_t(broken) * size_t(spec.dim)] = std::numeric_limits<float>::quiet_NaN();
  const NanModel m(tmp, spec, weights);
  parley_session* s = m.session;
  // Replies and scores, as the sampler does, take the NaN logit as "never".
  parley_generate_options g;
  parley_generate_options_init(&g);
  g.temperature = 0;
  g.max_tokens = 8;
  REQUIRE(parley_session_send(s, "ab cd", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  const char* const replies[] = {"ab", "cd ef"};
  double logprobs[2] = {1, 1};
  REQUIRE(parley_session_score_replies(s, "cd", replies, 2, 0, logprobs, nullptr) == PARLEY_OK);
  for (const double lp : logprobs) {
    CHECK(std::isfinite(lp));
    CHECK(lp <= 0);
  }
}

// A reply ends on every id a model's files name as an end of text: in a Hugging Face directory
// config.json's eos_token_id (each id of a list) and generation_config.json's, in a GGUF file
// tokenizer.ggml.eot_token_id and eom_token_id besides the EOS. A logit bias makes the random
// synthetic model write the id at once; a named id that is not a control piece is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "text/spm_model_proto.h"

using namespace parley;
using namespace parley::test;

namespace {

// The vocabulary's tail: control pieces, none of them the tokenizer.model's own BOS or EOS.
constexpr int32_t kVocab = 300;
constexpr int32_t kImStart = kVocab - 3, kImEnd = kVocab - 2, kEotId = kVocab - 1;
constexpr int32_t kOwnEos = 2;    // </s>, what tokenizer.model's trainer spec names
constexpr int32_t kNormal = 280;  // an ordinary piece
constexpr uint32_t kMaxTokens = 6;

SynthSpec spec() {
  SynthSpec s;
  s.n_vocab = kVocab;
  s.n_layers = 1;
  s.context_length = 64;
  return s;
}

SynthVocab vocab() {
  SynthVocab v = make_spm_vocab(kVocab - 3);
  for (const char* piece : {"<|im_start|>", "<|im_end|>", "<|eot_id|>"}) {
    v.tokens.push_back(piece);
    v.scores.push_back(0.0f);
    v.types.push_back(3);  // control
  }
  return v;
}

// A Hugging Face directory of the synthetic model whose tokenizer.model says </s> is the EOS.
std::string write_hf(const TempDir& tmp, const std::string& name, const std::string& config_patch,
                     const std::string& generation_config = "") {
  const auto tokenizer = tmp / "tokenizer.model";
  std::ofstream(tokenizer, std::ios::binary)
      << text::build_spm_model_proto(gguf_vocab_of(vocab()));
  HfDirOptions options;
  options.config_patch = config_patch;
  options.generation_config = generation_config;
  const auto dir = tmp / name;
  write_hf_dir(spec(), make_synth_weights(spec()), dir, tokenizer, options);
  return dir.string();
}

std::string write_gguf_file(const TempDir& tmp, const SynthVocab& v) {
  const auto path = tmp / "model.gguf";
  write_gguf(spec(), make_synth_weights(spec()), v, path);
  return path.string();
}

// Why a greedy reply with `favoured` pushed far above every other token ended.
int32_t stop_reason_favouring(parley_engine* e, const char* chat_template, int32_t favoured) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = chat_template;
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &so, &s) == PARLEY_OK, parley_last_error());
  parley_generate_options g = greedy_options(kMaxTokens);
  g.ignore_eos = 0;
  const parley_logit_bias bias{favoured, 100.0f};
  g.logit_bias = &bias;
  g.n_logit_bias = 1;
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  REQUIRE_MESSAGE(parley_session_send(s, "a b", &g, nullptr, nullptr, &stats) == PARLEY_OK,
                  parley_last_error());
  parley_session_close(s);
  if (stats.stop_reason == PARLEY_STOP_END_TOKEN) CHECK(stats.generated_tokens == 1);
  if (stats.stop_reason == PARLEY_STOP_MAX_TOKENS) CHECK(stats.generated_tokens == kMaxTokens);
  return stats.stop_reason;
}

// The message of a failed engine open, or "" when it opened.
std::string open_error(const std::string& model_path) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model_path.c_str();
  parley_engine* e = nullptr;
  const parley_status status = parley_engine_open(&eo, &e);
  if (status == PARLEY_OK) {
    parley_engine_close(e);
    return "";
  }
  CHECK(status == PARLEY_E_BAD_MODEL);
  return parley_last_error();
}

const std::vector<const char*> kTemplates = {"raw", "llama2", "mistral", "zephyr", "chatml"};

// With each template, a reply favouring an id of `ends` ends at it, one favouring an id of
// `runs_on` runs to max_tokens.
void check_end_ids(parley_engine* e, const std::vector<const char*>& templates,
                   const std::vector<int32_t>& ends, const std::vector<int32_t>& runs_on) {
  for (const char* chat_template : templates) {
    CAPTURE(chat_template);
    for (int32_t id : ends) {
      CAPTURE(id);
      CHECK(stop_reason_favouring(e, chat_template, id) == PARLEY_STOP_END_TOKEN);
    }
    for (int32_t id : runs_on) {
      CAPTURE(id);
      CHECK(stop_reason_favouring(e, chat_template, id) == PARLEY_STOP_MAX_TOKENS);
    }
  }
}

// The log-probability, scored with its end, of an empty reply to "a b" under `chat_template`:
// that of the reply ending at once.
double end_logprob(const std::string& model_path, const char* chat_template) {
  parley_engine* e = open_engine(model_path, PARLEY_KV_F32);
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = chat_template;
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &so, &s) == PARLEY_OK, parley_last_error());
  const char* empty = "";
  double logprob = 0;
  uint32_t n_tokens = 0;
  REQUIRE_MESSAGE(parley_session_score_replies(s, "a b", &empty, 1, PARLEY_SCORE_WITH_END,
                                               &logprob, &n_tokens) == PARLEY_OK,
                  parley_last_error());
  // Llama 2 ends a reply with " </s>": the space's pieces come first.
  if (std::string(chat_template) != "llama2") CHECK(n_tokens == 1);
  parley_session_close(s);
  parley_engine_close(e);
  return logprob;
}

}  // namespace

TEST_CASE("a Hugging Face model stops on config.json's EOS, not the tokenizer.model's") {
  TempDir tmp;
  parley_engine* e = open_engine(
      write_hf(tmp, "hf", R"({"eos_token_id": )" + std::to_string(kImEnd) + "}"), PARLEY_KV_F32);
  check_end_ids(e, kTemplates, {kImEnd}, {kOwnEos, kEotId});
  parley_engine_close(e);
}

TEST_CASE("a Hugging Face model stops on every id of an eos_token_id list") {
  TempDir tmp;
  const std::string list = "[" + std::to_string(kImEnd) + ", " + std::to_string(kEotId) + "]";
  parley_engine* e =
      open_engine(write_hf(tmp, "hf", R"({"eos_token_id": )" + list + "}"), PARLEY_KV_F32);
  check_end_ids(e, kTemplates, {kImEnd, kEotId}, {kImStart});
  parley_engine_close(e);
}

TEST_CASE("a Hugging Face model stops on generation_config.json's eos_token_id too") {
  TempDir tmp;
  parley_engine* e = open_engine(
      write_hf(tmp, "hf", "", R"({"eos_token_id": [2, )" + std::to_string(kEotId) + "]}"),
      PARLEY_KV_F32);
  check_end_ids(e, {"raw", "llama2"}, {kEotId, kOwnEos}, {kImEnd});
  parley_engine_close(e);
}

TEST_CASE("without eos_token_id a Hugging Face model stops on the tokenizer.model's EOS") {
  TempDir tmp;
  parley_engine* e = open_engine(
      write_hf(tmp, "hf", R"({"eos_token_id": null, "bos_token_id": null})"), PARLEY_KV_F32);
  check_end_ids(e, {"llama2"}, {kOwnEos}, {kImEnd});
  parley_engine_close(e);
}

TEST_CASE("a GGUF model stops on its end-of-turn and end-of-message ids too") {
  TempDir tmp;
  SynthVocab v = vocab();
  v.eot_id = kEotId;
  v.eom_id = kImEnd;
  parley_engine* e = open_engine(write_gguf_file(tmp, v), PARLEY_KV_F32);
  check_end_ids(e, {"raw", "llama2", "chatml"}, {kEotId, kImEnd, kOwnEos}, {kImStart});
  parley_engine_close(e);
}

TEST_CASE("a named end id outside the vocabulary or not a control piece is bad_model") {
  TempDir tmp;
  const std::string normal = std::to_string(kNormal);
  std::string message =
      open_error(write_hf(tmp, "normal", R"({"eos_token_id": [2, )" + normal + "]}"));
  CHECK(message.find("config.json: eos_token_id names token " + normal) != std::string::npos);
  CHECK(message.find("NORMAL") != std::string::npos);

  const std::string past = std::to_string(kVocab);
  message = open_error(write_hf(tmp, "past", R"({"eos_token_id": [2, )" + past + "]}"));
  CHECK(message.find("config.json: eos_token_id " + past + " is outside the vocabulary") !=
        std::string::npos);
  message = open_error(write_hf(tmp, "gen_past", "", R"({"eos_token_id": )" + past + "}"));
  CHECK(message.find("generation_config.json: eos_token_id " + past +
                     " is outside the vocabulary") != std::string::npos);

  message = open_error(write_hf(tmp, "gen", "", R"({"eos_token_id": )" + normal + "}"));
  CHECK(message.find("generation_config.json: eos_token_id names token " + normal) !=
        std::string::npos);

  SynthVocab v = vocab();
  v.eot_id = kNormal;
  message = open_error(write_gguf_file(tmp, v));
  CHECK(message.find("tokenizer.ggml.eot_token_id names token " + normal) != std::string::npos);
}

// A generated reply ends at any of them, so the end a score counts is any of them: the
// probabilities of the ids added, whichever the list names first. (Templates whose prompt
// holds no EOS, so that the four models see the same ids, and with no end marker of their own
// in this vocabulary, so that each model's end is its EOS alone.)
TEST_CASE("a scored end counts every id that ends a reply, in whatever order they are named") {
  TempDir tmp;
  const auto eos_is = [&](const std::string& name, const std::string& ids) {
    return write_hf(tmp, name, R"({"eos_token_id": )" + ids + "}");
  };
  const std::string own = eos_is("own", std::to_string(kOwnEos));
  const std::string eot = eos_is("eot", std::to_string(kEotId));
  const std::string both = eos_is("both", "[2, " + std::to_string(kEotId) + "]");
  const std::string reversed = eos_is("reversed", "[" + std::to_string(kEotId) + ", 2]");
  for (const std::string chat_template : {"llama2", "mistral"}) {
    CAPTURE(chat_template);
    const char* name = chat_template.c_str();
    const double p_own = std::exp(end_logprob(own, name));
    const double p_eot = std::exp(end_logprob(eot, name));
    CHECK(std::exp(end_logprob(both, name)) == doctest::Approx(p_own + p_eot));
    CHECK(std::exp(end_logprob(reversed, name)) == doctest::Approx(p_own + p_eot));
  }
}

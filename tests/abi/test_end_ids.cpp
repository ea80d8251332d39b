// parley_session_get_end_ids: the ids that end a session's replies, for banning with
// logit_bias. They depend on the model and the session's template.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "abi_fixture.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley::test;

namespace {

constexpr int32_t kStoriesBos = 1;
constexpr int32_t kStoriesEos = 2;
// A prompt the greedy raw reply of stories260k ends by itself, after about 150 tokens.
constexpr const char* kEndingPrompt = "The cat sat on the mat.";
constexpr uint32_t kRoomToEnd = 200;

std::vector<int32_t> end_ids(parley_session* s) {
  size_t n = 0;
  REQUIRE(parley_session_get_end_ids(s, nullptr, 0, &n) == PARLEY_OK);
  std::vector<int32_t> ids(n);
  REQUIRE(parley_session_get_end_ids(s, ids.data(), ids.size(), &n) == PARLEY_OK);
  REQUIRE(n == ids.size());
  return ids;
}

std::vector<int32_t> end_ids_of(parley_engine* e, const char* chat_template) {
  SessionHandle s(e, chat_template);
  return end_ids(s);
}

parley_session* create_session(parley_engine* e, const char* id, const char* chat_template) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.id = id;
  o.chat_template = chat_template;
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &o, &s) == PARLEY_OK, parley_last_error());
  return s;
}

parley_engine* open_engine(const std::string& model, const std::string& store = "") {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.store_path = store.empty() ? nullptr : store.c_str();
  o.n_threads = 2;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&o, &e) == PARLEY_OK, parley_last_error());
  return e;
}

// The greedy raw reply to kEndingPrompt, end tokens honoured, with `banned` at -INFINITY.
parley_turn_stats reply_banning(parley_engine* e, const std::vector<int32_t>& banned) {
  std::vector<parley_logit_bias> biases;
  for (int32_t id : banned) biases.push_back({id, -INFINITY});
  parley_generate_options g = greedy_options(kRoomToEnd);
  g.ignore_eos = 0;
  g.logit_bias = biases.data();
  g.n_logit_bias = uint32_t(biases.size());
  SessionHandle s(e, "raw");
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  REQUIRE_MESSAGE(parley_session_send(s, kEndingPrompt, &g, nullptr, nullptr, &stats) ==
                      PARLEY_OK,
                  parley_last_error());
  return stats;
}

// make_spm_vocab's pieces with chatml's end marker and a GGUF end-of-turn id added as control
// tokens, the marker before the eot so that the template's order is not ascending.
constexpr int32_t kImEnd = 310;
constexpr int32_t kEot = 300;

const std::string& model_with_more_end_ids() {
  static const auto dir = std::make_unique<TempDir>();
  static const std::string path = [] {
    SynthSpec spec;
    SynthVocab vocab = make_spm_vocab(spec.n_vocab);
    vocab.tokens[kImEnd] = "<|im_end|>";
    vocab.types[kImEnd] = 3;
    vocab.tokens[kEot] = "<|eot_id|>";
    vocab.types[kEot] = 3;
    vocab.eot_id = kEot;
    const std::string p = (dir->path() / "more-end-ids.gguf").string();
    write_gguf(spec, make_synth_weights(spec), vocab, p);
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("parley_session_get_end_ids: raw ends on BOS and EOS, ascending") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  EngineHandle e(gguf.string());
  CHECK(end_ids_of(e, "raw") == std::vector<int32_t>{kStoriesBos, kStoriesEos});
}

TEST_CASE("parley_session_get_end_ids: chatml without <|im_end|> in the vocabulary ends on EOS") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  EngineHandle e(gguf.string());
  int32_t marker[4];
  size_t n = 0;
  REQUIRE(parley_tokenize(e, "<|im_end|>", 0, marker, 4, &n) == PARLEY_OK);
  REQUIRE(n > 1);  // the vocabulary has no such token: the template writes it as text
  CHECK(end_ids_of(e, "chatml") == std::vector<int32_t>{kStoriesEos});
  CHECK(end_ids_of(e, "llama2") == std::vector<int32_t>{kStoriesEos});
}

TEST_CASE("parley_session_get_end_ids: the template's marker and the model's end ids count") {
  EngineHandle e(model_with_more_end_ids());
  CHECK(end_ids_of(e, "chatml") == std::vector<int32_t>{kStoriesEos, kEot, kImEnd});
  CHECK(end_ids_of(e, "raw") == std::vector<int32_t>{kStoriesBos, kStoriesEos, kEot});
  CHECK(end_ids_of(e, "zephyr") == std::vector<int32_t>{kStoriesEos, kEot});
}

TEST_CASE("parley_session_get_end_ids: banning them all makes a reply run to max_tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  EngineHandle e(gguf.string());
  const parley_turn_stats free = reply_banning(e, {});
  REQUIRE(free.stop_reason == PARLEY_STOP_END_TOKEN);
  REQUIRE(free.generated_tokens < kRoomToEnd);
  // EOS alone is not enough: raw stories260k ends this reply with BOS.
  CHECK(reply_banning(e, {kStoriesEos}).stop_reason == PARLEY_STOP_END_TOKEN);
  const parley_turn_stats banned = reply_banning(e, end_ids_of(e, "raw"));
  CHECK(banned.stop_reason == PARLEY_STOP_MAX_TOKENS);
  CHECK(banned.generated_tokens == kRoomToEnd);
}

TEST_CASE("parley_session_get_end_ids: the buffer rule") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  EngineHandle e(gguf.string());
  SessionHandle s(e, "raw");
  size_t n = 99;
  CHECK(parley_session_get_end_ids(s, nullptr, 0, &n) == PARLEY_OK);
  CHECK(n == 2);
  int32_t one[2] = {-7, -7};
  n = 0;
  CHECK(parley_session_get_end_ids(s, one, 1, &n) == PARLEY_OK);  // cut, still OK
  CHECK(n == 2);
  CHECK(one[0] == kStoriesBos);
  CHECK(one[1] == -7);  // past cap: untouched
  int32_t roomy[4] = {-7, -7, -7, -7};
  CHECK(parley_session_get_end_ids(s, roomy, 4, &n) == PARLEY_OK);
  CHECK(n == 2);
  CHECK(roomy[0] == kStoriesBos);
  CHECK(roomy[1] == kStoriesEos);
  CHECK(roomy[2] == -7);
}

TEST_CASE("parley_session_get_end_ids: a session reopened from the store keeps its template's") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string db = (dir / "sessions.db").string();
  parley_engine* e = open_engine(gguf.string(), db);
  parley_session_close(create_session(e, "chat", "chatml"));
  parley_engine_close(e);
  e = open_engine(gguf.string(), db);
  parley_session* s = nullptr;
  REQUIRE(parley_session_open(e, "chat", &s) == PARLEY_OK);
  CHECK(end_ids(s) == std::vector<int32_t>{kStoriesEos});
  parley_session_close(s);
  parley_engine_close(e);
}

// Replies that must be one JSON object (format PARLEY_FORMAT_JSON) on stories260K through the
// C ABI: what comes back parses as one (nlohmann::json reads it), ends where the object
// closes, keeps every choice the plain reply would make while that stays JSON, and bad
// starts or biases are refused with the conversation left as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_replies.h"
#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "text/json_prefix.h"

using namespace parley;
using namespace parley::test;

namespace {

parley_generate_options json_options(uint32_t max_tokens, const char* prefix = nullptr) {
  parley_generate_options g = greedy_options(max_tokens);
  g.ignore_eos = 0;
  g.format = PARLEY_FORMAT_JSON;
  g.reply_prefix = prefix;
  return g;
}

bool parses_as_object(const std::string& text) {
  return nlohmann::json::accept(text) && nlohmann::json::parse(text).is_object();
}

// The ids whose text, decoded alone, is `text` or starts with it.
std::vector<int32_t> ids_showing(parley_engine* e, const std::string& text, bool starts_with) {
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < int32_t(info.n_vocab); ++id) {
    char buf[64];
    size_t needed = 0;
    if (parley_detokenize(e, &id, 1, buf, sizeof buf, &needed) != PARLEY_OK) continue;
    const std::string shown(buf, needed - 1);
    if (starts_with ? shown.starts_with(text) : shown == text) ids.push_back(id);
  }
  return ids;
}

// Biases every token that shows '}' alone: the story model writes JSON's strings, keys and
// values readily but seldom closes an object of its own accord.
std::vector<parley_logit_bias> closing_bias(parley_engine* e, float bias) {
  std::vector<parley_logit_bias> biases;
  for (const int32_t id : ids_showing(e, "}", false)) biases.push_back({id, bias});
  REQUIRE_FALSE(biases.empty());
  return biases;
}

}  // namespace

TEST_CASE("sampled JSON replies parse as one object, or are cut by max_tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_INT8);
  const std::vector<parley_logit_bias> closing = closing_bias(e, 15.0f);
  int whole = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    CAPTURE(seed);
    parley_session* s = create_raw_session(e, nullptr);
    parley_generate_options g = json_options(200, seed % 2 ? "{\"story\": \"" : nullptr);
    g.temperature = 1.0f;
    g.seed = seed;
    // Half of them without help: those rarely close within max_tokens.
    if (seed > 12) {
      g.logit_bias = closing.data();
      g.n_logit_bias = uint32_t(closing.size());
    }
    const Reply r = send(s, "Once upon a time", g);
    REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
    const std::string kept = turn_text(s, 1);
    CAPTURE(kept);
    CHECK(r.streamed == kept);
    if (r.stats.stop_reason == PARLEY_STOP_FORMAT_END) {
      ++whole;
      CHECK(parses_as_object(kept));
    } else {
      CHECK(r.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
      CHECK(r.stats.generated_tokens == 200);
      CHECK(text::JsonPrefix::taken_length(kept) == kept.size());
      CHECK_FALSE(parses_as_object(kept));
    }
    parley_session_close(s);
  }
  CHECK(whole >= 6);
  parley_engine_close(e);
}

TEST_CASE("a greedy JSON reply takes the plain reply's tokens for as long as they stay JSON") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  size_t longest_token = 0;
  for (const int32_t id : ids_showing(e, "", true)) {
    char buf[64];
    size_t needed = 0;
    REQUIRE(parley_detokenize(e, &id, 1, buf, sizeof buf, &needed) == PARLEY_OK);
    longest_token = std::max(longest_token, needed - 1 + 1);  // and the space it may drop
  }
  for (const char* prefix : {"{\"story\": \"Once upon a time", "{\"name\": \"Lily", "{\"a\": [1, "}) {
    CAPTURE(prefix);
    parley_session* plain = create_raw_session(e, nullptr);
    parley_generate_options g = greedy_options(40);
    g.reply_prefix = prefix;
    Reply r = send(plain, "", g);
    REQUIRE(r.status == PARLEY_OK);
    const std::string plain_text = r.streamed;
    parley_session* json = create_raw_session(e, nullptr);
    g.format = PARLEY_FORMAT_JSON;
    r = send(json, "", g);
    REQUIRE(r.status == PARLEY_OK);
    const std::string json_text = r.streamed;
    CAPTURE(plain_text);
    CAPTURE(json_text);
    // The plain reply's text is the start of an object up to byte `valid`; the JSON reply
    // follows it to the start of the token that crosses that point, at least.
    const size_t valid = text::JsonPrefix::taken_length(plain_text);
    size_t same = 0;
    while (same < std::min(plain_text.size(), json_text.size()) &&
           plain_text[same] == json_text[same]) {
      ++same;
    }
    CHECK(same + longest_token >= std::min(valid, json_text.size()));
    CHECK(same <= valid);
    parley_session_close(plain);
    parley_session_close(json);
  }
  parley_engine_close(e);
}

TEST_CASE("the reply ends as the object closes, also when its prefix closes it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);
  // A bias that makes '}' the one choice after a value closes the object at once.
  const std::vector<parley_logit_bias> biases = closing_bias(e, 100.0f);
  parley_generate_options g = json_options(50, "{\"a\": 1");
  g.logit_bias = biases.data();
  g.n_logit_bias = uint32_t(biases.size());
  Reply r = send(s, "Once upon a time", g);
  REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  CHECK(r.stats.stop_reason == PARLEY_STOP_FORMAT_END);
  CHECK(r.stats.generated_tokens == 1);
  CHECK(parses_as_object(r.streamed));
  CHECK(nlohmann::json::parse(r.streamed) == nlohmann::json{{"a", 1}});

  // The prefix alone is a whole object: nothing is generated.
  r = send(s, "Once more", json_options(50, "{}"));
  REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  CHECK(r.stats.stop_reason == PARLEY_STOP_FORMAT_END);
  CHECK(r.stats.generated_tokens == 0);
  CHECK(r.streamed == "{}");
  CHECK(turn_text(s, 3) == "{}");
  // The conversation goes on after a reply the format ended.
  r = send(s, "And then", greedy_options(5));
  CHECK_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a reply cut short goes on as JSON with parley_session_continue") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);
  const std::vector<parley_logit_bias> closing = closing_bias(e, 15.0f);
  parley_generate_options g = json_options(4, "{\"story\": \"");
  g.temperature = 1.0f;
  g.seed = 5;
  const Reply r = send(s, "Once upon a time", g);
  REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
  REQUIRE(r.stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
  parley_generate_options more = json_options(20);
  more.temperature = 1.0f;
  more.logit_bias = closing.data();
  more.n_logit_bias = uint32_t(closing.size());
  const Continued continued = continue_until_closed(s, more, 30);
  const std::string whole = r.streamed + continued.text;
  CAPTURE(whole);
  REQUIRE(continued.closed);
  CHECK(turn_text(s, 1) == whole);
  CHECK(parses_as_object(whole));
  // Once whole, going on adds nothing.
  const parley_generate_options again = json_options(20);
  std::string streamed;
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  REQUIRE(parley_session_continue(s, &again, append_text, &streamed, &stats) == PARLEY_OK);
  CHECK(stats.stop_reason == PARLEY_STOP_FORMAT_END);
  CHECK(stats.generated_tokens == 0);
  CHECK(streamed.empty());
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("what cannot become an object is refused, and the conversation stays as it was") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  parley_session* s = create_raw_session(e, nullptr);

  CHECK(send(s, "Once", json_options(10, "{\"a\" 1")).status == PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).ends_with(
      "reply_prefix is not the start of a JSON object, which format JSON asks the reply to "
      "be: its byte 6 of 6 cannot come there"));
  CHECK(session_info(s).n_turns == 0);

  // A plain reply that is not an object's start cannot go on as one.
  REQUIRE(send(s, "Once upon a time", greedy_options(3)).status == PARLEY_OK);
  const std::vector<int32_t> before = session_tokens(s);
  parley_generate_options more = json_options(10);
  CHECK(parley_session_continue(s, &more, nullptr, nullptr, nullptr) ==
        PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).find("the reply so far is not the start of a JSON") !=
        std::string::npos);
  CHECK(session_tokens(s) == before);

  // Biases that ban every token the format allows: after "t" only "rue" may follow.
  std::vector<parley_logit_bias> bans;
  for (const int32_t id : ids_showing(e, "r", true)) {
    bans.push_back({id, -std::numeric_limits<float>::infinity()});
  }
  parley_generate_options g = json_options(10, "{\"a\": t");
  g.logit_bias = bans.data();
  g.n_logit_bias = uint32_t(bans.size());
  CHECK(send(s, "Twice", g).status == PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).ends_with(
      "logit_bias bans every token the reply's format allows at this point of the reply"));
  CHECK(session_tokens(s) == before);
  CHECK(session_info(s).n_turns == 2);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a vocabulary that cannot spell what JSON needs next is UNSUPPORTED, not stuck") {
  // A synthetic model without byte pieces whose other pieces are letters after an optional
  // U+2581: after a ',' in an object, where a key's quote must come, nothing can follow.
  SynthSpec spec;
  spec.n_vocab = 300;
  spec.n_layers = 1;
  spec.context_length = 64;
  SynthVocab vocab = make_spm_vocab(spec.n_vocab);
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.types[i] != 6) continue;
    vocab.tokens[i] = "byte" + vocab.tokens[i].substr(3, 2);  // "<0x41>" -> "byte41"
    vocab.types[i] = 1;
  }
  TempDir tmp;
  const auto path = tmp / "model.gguf";
  write_gguf(spec, make_synth_weights(spec), vocab, path);
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  const std::string model = path.string();
  eo.model_path = model.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, std::string(parley_last_error()));
  parley_session* s = create_raw_session(e, nullptr);
  const Reply r = send(s, "hi", json_options(10, "{\"a\": 1,"));
  CHECK(r.status == PARLEY_E_UNSUPPORTED);
  CHECK(std::string(parley_last_error()).ends_with(
      "the model's vocabulary has no token that can go on with the reply's JSON object after "
      "its 8 bytes (it lacks byte pieces to spell what JSON needs there)"));
  CHECK(session_info(s).n_turns == 0);
  parley_session_close(s);
  parley_engine_close(e);
}

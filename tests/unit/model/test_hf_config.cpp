#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/error_check.h"
#include "model/hf_config.h"
#include "support/log_capture.h"
#include "support/shared_assets.h"

using parley::Status;
using parley::model::parse_hf_config;
using json = nlohmann::json;

namespace {

// A Mistral-7B-shaped config.json.
json mistral() {
  return {{"architectures", {"MistralForCausalLM"}},
          {"model_type", "mistral"},
          {"vocab_size", 32000},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"max_position_embeddings", 32768},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 1000000.0},
          {"sliding_window", 4096},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"bos_token_id", 1},
          {"eos_token_id", 2}};
}

parley::model::HfConfig parse(const json& config, const std::string& tokenizer_config = "") {
  return parse_hf_config(config.dump(), tokenizer_config, "my-model");
}

}  // namespace

TEST_CASE("HF config: a Mistral config.json") {
  const auto hf = parse(mistral());
  const auto& c = hf.config;
  CHECK(c.name == "my-model");
  CHECK(c.n_vocab == 32000);
  CHECK(c.dim == 4096);
  CHECK(c.hidden_dim == 14336);
  CHECK(c.n_layers == 32);
  CHECK(c.n_heads == 32);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.head_dim == 128);
  CHECK(c.context_length == 32768);
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.rope_theta == 1e6f);
  CHECK(c.sliding_window == 4096);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK_FALSE(hf.tie_word_embeddings);
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("HF config: optional fields and their defaults") {
  json j = mistral();
  for (const char* k :
       {"num_key_value_heads", "rope_theta", "tie_word_embeddings", "hidden_act", "bos_token_id"})
    j.erase(k);
  j["sliding_window"] = nullptr;
  j["head_dim"] = nullptr;
  j["rope_scaling"] = nullptr;
  j["eos_token_id"] = {7, 2};  // several stop ids: the first is the EOS
  j["pad_token_id"] = nullptr;
  const auto hf = parse(j);
  CHECK(hf.config.n_kv_heads == 32);
  CHECK(hf.config.rope_theta == 10000.0f);
  CHECK(hf.config.sliding_window == 0);
  CHECK(hf.config.head_dim == 128);
  CHECK(hf.config.bos_id == 1);
  CHECK(hf.config.eos_id == 7);
  CHECK(hf.config.pad_id == -1);
  CHECK_FALSE(hf.tie_word_embeddings);

  json k = mistral();
  k["head_dim"] = 64;  // explicit, not hidden_size / heads
  k["tie_word_embeddings"] = true;
  k.erase("model_type");  // architectures alone identifies the model
  const auto hk = parse(k);
  CHECK(hk.config.head_dim == 64);
  CHECK(hk.tie_word_embeddings);
}

TEST_CASE("HF config: the special ids config.json names, for the tokenizer") {
  const auto single = parse(mistral());
  CHECK(single.bos_id == std::optional<int32_t>(1));
  CHECK(single.eos_ids == std::vector<int32_t>{2});

  // Every id of a list ends a reply; the model config keeps the first, as the fingerprint did.
  json listed = mistral();
  listed["vocab_size"] = 32064;  // ChatML markers added after the base vocabulary
  listed["eos_token_id"] = {32001, 2, 32005};
  listed["bos_token_id"] = {5};
  const auto several = parse(listed);
  CHECK(several.eos_ids == std::vector<int32_t>{32001, 2, 32005});
  CHECK(several.config.eos_id == 32001);
  CHECK(several.bos_id == std::optional<int32_t>(5));
  CHECK(several.config.bos_id == 5);

  // Absent or null: the tokenizer.model's own ids, and the config's defaults.
  json absent = mistral();
  absent.erase("bos_token_id");
  absent["eos_token_id"] = nullptr;
  const auto none = parse(absent);
  CHECK_FALSE(none.bos_id.has_value());
  CHECK(none.eos_ids.empty());
  CHECK(none.config.bos_id == 1);
  CHECK(none.config.eos_id == 2);

  json mixed = mistral();
  mixed["eos_token_id"] = {2, "7"};
  CHECK_PARLEY_ERROR(parse(mixed), Status::bad_model, "config.json", "eos_token_id",
                     "not an integer");
  json past = mistral();
  past["eos_token_id"] = {2, 32000};
  CHECK_PARLEY_ERROR(parse(past), Status::bad_model,
                     "config.json: eos_token_id 32000 is outside the vocabulary [0, 32000)");
  json past_bos = mistral();
  past_bos["bos_token_id"] = 32000;
  CHECK_PARLEY_ERROR(parse(past_bos), Status::bad_model,
                     "config.json: bos_token_id 32000 is outside the vocabulary [0, 32000)");
  json negative = mistral();
  negative["eos_token_id"] = {2, -1};
  CHECK_PARLEY_ERROR(parse(negative), Status::bad_model, "config.json", "eos_token_id",
                     "out of range");
}

TEST_CASE("HF config: generation_config.json's eos_token_id, one id or a list") {
  using parley::model::parse_generation_eos_ids;
  CHECK(parse_generation_eos_ids(R"({"eos_token_id": 32001})") == std::vector<int32_t>{32001});
  CHECK(parse_generation_eos_ids(R"({"bos_token_id": 1, "eos_token_id": [2, 32001]})") ==
        std::vector<int32_t>{2, 32001});
  CHECK(parse_generation_eos_ids(R"({"bos_token_id": 1})").empty());
  CHECK(parse_generation_eos_ids(R"({"eos_token_id": null})").empty());
  CHECK_PARLEY_ERROR(parse_generation_eos_ids("{"), Status::bad_model, "generation_config.json");
  CHECK_PARLEY_ERROR(parse_generation_eos_ids("[2]"), Status::bad_model, "generation_config.json");
  CHECK_PARLEY_ERROR(parse_generation_eos_ids(R"({"eos_token_id": "2"})"), Status::bad_model,
                     "generation_config.json", "eos_token_id");
  CHECK_PARLEY_ERROR(parse_generation_eos_ids(R"({"eos_token_id": []})"), Status::bad_model,
                     "generation_config.json", "eos_token_id", "empty");
  CHECK_PARLEY_ERROR(parse_generation_eos_ids(R"({"eos_token_id": [2, 1e3]})"), Status::bad_model,
                     "generation_config.json", "eos_token_id");
}

TEST_CASE("HF config: tokenizer_config.json gives the chat template and add_bos") {
  const auto hf =
      parse(mistral(), R"({"add_bos_token": false, "chat_template": "{{ bos_token }}"})");
  CHECK(hf.config.chat_template == "{{ bos_token }}");
  CHECK_FALSE(hf.config.add_bos);
  const auto named = parse(
      mistral(),
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  CHECK(named.config.chat_template == "D");
  CHECK(parse(mistral(), "{}").config.add_bos);
  CHECK_PARLEY_ERROR(parse(mistral(), "[1]"), Status::bad_model, "tokenizer_config.json");
  CHECK_PARLEY_ERROR(parse(mistral(), R"({"add_bos_token": "yes"})"), Status::bad_model,
                     "add_bos_token");
  CHECK_PARLEY_ERROR(parse(mistral(), R"({"chat_template": 5})"), Status::bad_model,
                     "chat_template");
}

TEST_CASE("HF config: unsupported models and features") {
  json gpt2 = mistral();
  gpt2["model_type"] = "gpt2";
  gpt2["architectures"] = {"GPT2LMHeadModel"};
  CHECK_PARLEY_ERROR(parse(gpt2), Status::unsupported, "model_type 'gpt2'");
  json scaled = mistral();
  scaled["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  CHECK_PARLEY_ERROR(parse(scaled), Status::unsupported, "rope_scaling");
  json gelu = mistral();
  gelu["hidden_act"] = "gelu";
  CHECK_PARLEY_ERROR(parse(gelu), Status::unsupported, "hidden_act");
  json bias = mistral();
  bias["attention_bias"] = true;
  CHECK_PARLEY_ERROR(parse(bias), Status::unsupported, "attention_bias");
}

TEST_CASE("HF config: rope_scaling of rope_type 'default' is no scaling") {
  for (const char* key : {"rope_type", "type"}) {
    CAPTURE(key);
    json scaling = mistral();
    scaling["rope_scaling"] = {{key, "default"}};
    CHECK(parse(scaling).config.rope_theta == 1000000.0f);
  }
  json null_scaling = mistral();
  null_scaling["rope_scaling"] = nullptr;
  CHECK_NOTHROW(parse(null_scaling));
  for (const json& other : {json{{"rope_type", "llama3"}, {"factor", 8.0}},
                            json{{"type", "dynamic"}}, json{{"factor", 2.0}}, json("default")}) {
    CAPTURE(other.dump());
    json scaled = mistral();
    scaled["rope_scaling"] = other;
    CHECK_PARLEY_ERROR(parse(scaled), Status::unsupported, "rope_scaling");
  }
}

namespace {

// mistral() as transformers 5 writes it: RoPE settings in rope_parameters alone.
json with_rope_parameters(const json& params) {
  json j = mistral();
  j.erase("rope_theta");
  j["rope_parameters"] = params;
  return j;
}

}  // namespace

TEST_CASE("HF config: rope_parameters gives the RoPE base") {
  CHECK(parse(with_rope_parameters({{"rope_type", "default"}, {"rope_theta", 500000.0}}))
            .config.rope_theta == 500000.0f);
  // No kind is "default", as is the older key "type".
  CHECK(parse(with_rope_parameters({{"rope_theta", 500000}})).config.rope_theta == 500000.0f);
  CHECK(parse(with_rope_parameters({{"type", "default"}, {"rope_theta", 2e5}})).config.rope_theta ==
        200000.0f);
  // Without a rope_theta of its own, the top-level one applies, else 10000.
  json top = with_rope_parameters({{"rope_type", "default"}});
  top["rope_theta"] = 1e6;
  CHECK(parse(top).config.rope_theta == 1e6f);
  CHECK(parse(with_rope_parameters(json::object())).config.rope_theta == 10000.0f);
  CHECK(parse(with_rope_parameters(nullptr)).config.rope_theta == 10000.0f);
  // Both, agreeing.
  json both = mistral();
  both["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000}};
  CHECK(parse(both).config.rope_theta == 1e6f);
}

TEST_CASE("HF config: rope_parameters that differ from rope_theta or are malformed") {
  json both = mistral();  // rope_theta 1000000.0
  both["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  CHECK_PARLEY_ERROR(parse(both), Status::bad_model,
                     "config.json: rope_theta 1000000.0 and rope_parameters.rope_theta 10000.0 "
                     "differ");
  for (const json& other : {json("default"), json(5), json::array({1})}) {
    CAPTURE(other.dump());
    CHECK_PARLEY_ERROR(parse(with_rope_parameters(other)), Status::bad_model,
                       "config.json: rope_parameters", "is not an object");
  }
  CHECK_PARLEY_ERROR(parse(with_rope_parameters({{"rope_theta", "1e6"}})), Status::bad_model,
                     "config.json: rope_parameters.rope_theta = \"1e6\" is not a number");
}

TEST_CASE("HF config: rope_parameters of a rope_type other than 'default' are unsupported") {
  const std::pair<json, std::string> cases[] = {
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"rope_theta", 10000.0}}, "\"yarn\""},
      {{{"rope_type", "llama3"}, {"factor", 8.0}, {"rope_theta", 500000.0}}, "\"llama3\""},
      {{{"type", "linear"}, {"factor", 2.0}}, "\"linear\""},
      {{{"rope_type", 3}}, "3"}};
  for (const auto& [params, kind] : cases) {
    CAPTURE(params.dump());
    CHECK_PARLEY_ERROR(parse(with_rope_parameters(params)), Status::unsupported,
                       "config.json: rope_parameters of type " + kind +
                           " is not supported (only \"default\")");
  }
}

TEST_CASE("HF config: rope_parameters per layer type") {
  // Entries that all restate one plain RoPE are that RoPE.
  const json same = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 5e5}}},
                     {"sliding_attention", {{"rope_theta", 500000}}}};
  CHECK(parse(with_rope_parameters(same)).config.rope_theta == 500000.0f);
  json inherited = mistral();  // entries without a base of their own take the top-level one
  inherited["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}},
                                  {"sliding_attention", json::object()}};
  CHECK(parse(inherited).config.rope_theta == 1e6f);

  const json differ = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                       {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  CHECK_PARLEY_ERROR(parse(with_rope_parameters(differ)), Status::unsupported,
                     "config.json: rope_parameters per layer type with different RoPE",
                     "rope_parameters['full_attention'].rope_theta 1000000.0",
                     "rope_parameters['sliding_attention'].rope_theta 10000.0",
                     "is not supported");
  const json scaled = {{"full_attention", {{"rope_type", "yarn"}, {"factor", 4.0}}},
                       {"sliding_attention", {{"rope_type", "default"}}}};
  CHECK_PARLEY_ERROR(parse(with_rope_parameters(scaled)), Status::unsupported,
                     "config.json: rope_parameters['full_attention'] of type \"yarn\" is not "
                     "supported");
  json conflicting = mistral();
  conflicting["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e4}}}};
  CHECK_PARLEY_ERROR(parse(conflicting), Status::bad_model,
                     "rope_theta 1000000.0 and rope_parameters['full_attention'].rope_theta "
                     "10000.0 differ");
  const json mixed = {{"full_attention", {{"rope_theta", 1e4}}}, {"rope_type", "default"}};
  CHECK_PARLEY_ERROR(parse(with_rope_parameters(mixed)), Status::bad_model,
                     "config.json: rope_parameters['rope_type'] = \"default\" is not an object");
}

TEST_CASE("HF config: mixture-of-experts configs are unsupported, even as model_type llama") {
  json moe = mistral();
  moe["model_type"] = "llama";
  moe["architectures"] = {"LlamaForCausalLM"};
  moe["num_local_experts"] = 8;
  moe["num_experts_per_tok"] = 2;
  CHECK_PARLEY_ERROR(parse(moe), Status::unsupported,
                     "mixture-of-experts models (8 experts) are not supported",
                     "num_local_experts");
  json mixtral = moe;
  mixtral["model_type"] = "mixtral";
  mixtral["architectures"] = {"MixtralForCausalLM"};
  CHECK_PARLEY_ERROR(parse(mixtral), Status::unsupported, "model_type 'mixtral'");
  json dense = moe;
  dense["num_local_experts"] = 0;
  CHECK_NOTHROW(parse(dense));
  json text = moe;
  text["num_local_experts"] = "8";
  CHECK_PARLEY_ERROR(parse(text), Status::bad_model, "num_local_experts");
}

TEST_CASE("HF config: a pad_token_id outside the vocabulary is dropped with a warning") {
  parley::test::LogCapture log;
  json outside = mistral();
  outside["pad_token_id"] = 32000;
  CHECK(parse(outside).config.pad_id == -1);
  CHECK(log.count("config.json: pad_token_id 32000 is outside the vocabulary [0, 32000)") == 1);
  json inside = mistral();
  inside["pad_token_id"] = 31999;
  CHECK(parse(inside).config.pad_id == 31999);
  CHECK(log.count("pad_token_id") == 1);
}

TEST_CASE("HF config: malformed config.json names the field") {
  CHECK_PARLEY_ERROR(parse_hf_config("{", "", "x"), Status::bad_model, "config.json", "JSON");
  CHECK_PARLEY_ERROR(parse_hf_config("[]", "", "x"), Status::bad_model, "config.json", "object");
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "max_position_embeddings", "rms_norm_eps"}) {
    CAPTURE(key);
    json missing = mistral();
    missing.erase(key);
    CHECK_PARLEY_ERROR(parse(missing), Status::bad_model, key, "missing");
    json wrong = mistral();
    wrong[key] = "12";
    CHECK_PARLEY_ERROR(parse(wrong), Status::bad_model, key);
  }
  json frac = mistral();
  frac["num_hidden_layers"] = 2.5;
  CHECK_PARLEY_ERROR(parse(frac), Status::bad_model, "num_hidden_layers", "not an integer");
  json negative = mistral();
  negative["vocab_size"] = -5;
  CHECK_PARLEY_ERROR(parse(negative), Status::bad_model, "vocab_size", "out of range");
  json huge = mistral();
  huge["hidden_size"] = uint64_t(1) << 40;
  CHECK_PARLEY_ERROR(parse(huge), Status::bad_model, "hidden_size", "out of range");
  json indivisible = mistral();
  indivisible["num_attention_heads"] = 30;
  CHECK_PARLEY_ERROR(parse(indivisible), Status::bad_model, "hidden_size", "num_attention_heads");
  json empty_eos = mistral();
  empty_eos["eos_token_id"] = json::array();
  CHECK_PARLEY_ERROR(parse(empty_eos), Status::bad_model, "eos_token_id");
  json tie = mistral();
  tie["tie_word_embeddings"] = "no";
  CHECK_PARLEY_ERROR(parse(tie), Status::bad_model, "tie_word_embeddings");
  json window = mistral();
  window["sliding_window"] = "4096";
  CHECK_PARLEY_ERROR(parse(window), Status::bad_model, "sliding_window");
}

TEST_CASE("HF config: the stories260K config.json") {
  PARLEY_SHARED_OR_SKIP(config, "models/stories260k/hf/config.json");
  PARLEY_SHARED_OR_SKIP(tok_config, "models/stories260k/hf/tokenizer_config.json");
  const auto hf =
      parse_hf_config(parley::test::read_file(config), parley::test::read_file(tok_config), "hf");
  const auto& c = hf.config;
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.n_vocab == 512);
  CHECK(c.context_length == 512);
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.rope_theta == 10000.0f);
  CHECK(c.add_bos);
  CHECK(hf.tie_word_embeddings);
}

TEST_CASE("HF config: RoPE over part of each head (partial_rotary_factor) is unsupported") {
  json full = mistral();
  full["partial_rotary_factor"] = 1.0;
  CHECK_NOTHROW(parse(full));
  json partial = mistral();
  partial["partial_rotary_factor"] = 0.5;
  CHECK_PARLEY_ERROR(parse(partial), Status::unsupported,
                     "config.json: partial_rotary_factor 0.5 is not supported");
  CHECK_PARLEY_ERROR(
      parse(with_rope_parameters({{"rope_type", "default"}, {"partial_rotary_factor", 0.25}})),
      Status::unsupported, "config.json: rope_parameters.partial_rotary_factor 0.25");
  CHECK_NOTHROW(
      parse(with_rope_parameters({{"rope_type", "default"}, {"partial_rotary_factor", 1}})));
  json text = mistral();
  text["partial_rotary_factor"] = "half";
  CHECK_PARLEY_ERROR(parse(text), Status::bad_model,
                     "config.json: partial_rotary_factor = \"half\" is not a number");
}

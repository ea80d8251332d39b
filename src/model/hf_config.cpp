#include "model/hf_config.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/error.h"
#include "common/shown_id.h"
#include "model/json_shown.h"

namespace parley::model {

namespace {

using json = nlohmann::json;

constexpr std::string_view kConfigFile = "config.json";
constexpr std::string_view kGenerationConfigFile = "generation_config.json";

[[noreturn]] void bad_in(std::string_view file, const std::string& what) {
  fail(Status::bad_model, std::string(file) + ": " + what);
}
[[noreturn]] void bad(const std::string& what) { bad_in(kConfigFile, what); }
[[noreturn]] void unsupported(const std::string& what) {
  fail(Status::unsupported, "config.json: " + what);
}

// The field, or nullptr when absent or null (HF writes null for "not set").
const json* field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int32_t to_i32(const json& v, const std::string& key, int64_t min,
               std::string_view file = kConfigFile) {
  if (!v.is_number_integer()) bad_in(file, key + " = " + json_shown(v) + " is not an integer");
  const bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (!negative && v.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max()))
    bad_in(file, key + " = " + json_shown(v) + " is out of range");
  const int64_t i = negative ? v.get<int64_t>() : int64_t(v.get<uint64_t>());
  if (i < min) bad_in(file, key + " = " + json_shown(v) + " is out of range");
  return int32_t(i);
}

std::optional<int32_t> get_i32(const json& j, const char* key, int64_t min = 0) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  return to_i32(*v, key, min);
}

int32_t require_i32(const json& j, const char* key) {
  const auto v = get_i32(j, key);
  if (!v) bad(std::string(key) + " is missing");
  return *v;
}

std::optional<double> get_number(const json& j, const char* key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(std::string(key) + " = " + json_shown(*v) + " is not a number");
  return v->get<double>();
}

std::optional<bool> get_bool(const json& j, const char* key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(std::string(key) + " = " + json_shown(*v) + " is not a boolean");
  return v->get<bool>();
}

// A token id or a list of them (generation may stop on several EOS ids); empty when absent.
std::vector<int32_t> get_token_ids(const json& j, const char* key,
                                   std::string_view file = kConfigFile) {
  const json* v = field(j, key);
  if (!v) return {};
  if (!v->is_array()) return {to_i32(*v, key, 0, file)};
  if (v->empty()) bad_in(file, std::string(key) + " is an empty list");
  std::vector<int32_t> ids;
  for (const json& id : *v) ids.push_back(to_i32(id, key, 0, file));
  return ids;
}

// Checked here, before the model config's own check, so that the message names the key.
void check_in_vocabulary(const std::vector<int32_t>& ids, const char* key, int32_t n_vocab) {
  for (int32_t id : ids) {
    if (id >= n_vocab) {
      bad(std::string(key) + " " + std::to_string(id) + " is outside the vocabulary [0, " +
          std::to_string(n_vocab) + ")");
    }
  }
}

void check_architecture(const json& j) {
  static constexpr std::string_view kTypes[] = {"llama", "mistral"};
  static constexpr std::string_view kArchs[] = {"LlamaForCausalLM", "MistralForCausalLM"};
  std::string model_type;
  if (const json* t = field(j, "model_type")) {
    if (!t->is_string()) bad("model_type is not a string");
    model_type = t->get<std::string>();
    if (std::find(std::begin(kTypes), std::end(kTypes), model_type) != std::end(kTypes)) return;
  }
  if (const json* a = field(j, "architectures"); a && a->is_array()) {
    for (const json& name : *a) {
      if (name.is_string() && std::find(std::begin(kArchs), std::end(kArchs),
                                        name.get<std::string>()) != std::end(kArchs)) {
        return;
      }
    }
  }
  unsupported("model_type '" + model_type + "' is not supported (llama and mistral are)");
}

// rope_scaling's kind: "rope_type", or "type" as older configs write it.
const json* rope_kind(const json& scaling) {
  if (!scaling.is_object()) return nullptr;
  const json* kind = field(scaling, "rope_type");
  return kind ? kind : field(scaling, "type");
}

// transformers reads the kind "default" as no scaling at all.
bool is_default_rope(const json& scaling) {
  const json* kind = rope_kind(scaling);
  return kind && kind->is_string() && kind->get<std::string>() == "default";
}

// A rope_parameters entry's kind other than "default" (absent means "default") scales
// positions or frequencies, which the kernels do not.
void check_rope_entry_kind(const json& entry, const std::string& key) {
  const json* kind = rope_kind(entry);
  if (kind && !is_default_rope(entry)) {
    unsupported(key + " of type " + json_shown(*kind) + " is not supported (only \"default\")");
  }
}

// transformers rotates only this fraction of each head's dimensions; the kernels rotate all.
void check_full_rotary(const json& j, const std::string& key) {
  const json* factor = field(j, "partial_rotary_factor");
  if (!factor) return;
  if (!factor->is_number()) bad(key + " = " + json_shown(*factor) + " is not a number");
  if (factor->get<double>() != 1.0) {
    unsupported(key + " " + json_shown(*factor) +
                " is not supported (RoPE over part of each head; only 1)");
  }
}

// A RoPE base as a file gives it: the value and the key that names it in messages.
struct RopeBase {
  const json* value = nullptr;  // a number; nullptr when not given
  std::string key;
};

RopeBase number_at(const json& j, const char* field_key, std::string key) {
  const json* v = field(j, field_key);
  if (v && !v->is_number()) bad(key + " = " + json_shown(*v) + " is not a number");
  return {v, std::move(key)};
}

bool same_base(const RopeBase& a, const RopeBase& b) {
  if (!a.value || !b.value) return !a.value && !b.value;
  return a.value->get<double>() == b.value->get<double>();
}

std::string shown_base(const RopeBase& b) {
  return b.key + " " + (b.value ? json_shown(*b.value) : "absent");
}

// The base a rope_parameters entry gives: its own rope_theta, which must agree with a
// top-level one, else the top-level one (as transformers fills it in).
RopeBase entry_base(const json& entry, const std::string& key, const RopeBase& top) {
  if (!entry.is_object()) bad(key + " = " + json_shown(entry) + " is not an object");
  check_rope_entry_kind(entry, key);
  check_full_rotary(entry, key + ".partial_rotary_factor");
  RopeBase own = number_at(entry, "rope_theta", key + ".rope_theta");
  if (!own.value) return {top.value, std::move(own.key)};
  if (top.value && !same_base(top, own))
    bad(shown_base(top) + " and " + shown_base(own) + " differ");
  return own;
}

// Models with several attention kinds key rope_parameters by layer type ({"full_attention":
// {...}, "sliding_attention": {...}}); the single form holds no objects.
bool is_per_layer_type(const json& params) {
  return std::any_of(params.begin(), params.end(), [](const json& v) { return v.is_object(); });
}

// Entries per layer type that all restate one plain RoPE are that RoPE; the kernels apply one
// RoPE to every layer, so entries that differ are refused.
RopeBase per_layer_type_base(const json& params, const RopeBase& top) {
  std::optional<RopeBase> first;
  for (const auto& [type, entry] : params.items()) {
    RopeBase base = entry_base(entry, "rope_parameters[" + shown_id(type) + "]", top);
    if (!first) {
      first = std::move(base);
    } else if (!same_base(*first, base)) {
      unsupported("rope_parameters per layer type with different RoPE (" + shown_base(*first) +
                  ", " + shown_base(base) + ") is not supported (one RoPE for every layer)");
    }
  }
  return first.value_or(top);
}

// The RoPE base: rope_parameters' (the layout transformers 5 writes, in place of the
// top-level rope_theta and rope_scaling) or the top-level rope_theta; else 10000, as
// transformers defaults it for Llama and Mistral.
double rope_theta(const json& j) {
  const RopeBase top = number_at(j, "rope_theta", "rope_theta");
  RopeBase base = top;
  if (const json* params = field(j, "rope_parameters")) {
    if (!params->is_object()) bad("rope_parameters = " + json_shown(*params) + " is not an object");
    base = is_per_layer_type(*params) ? per_layer_type_base(*params, top)
                                      : entry_base(*params, "rope_parameters", top);
  }
  return base.value ? base.value->get<double>() : 10000.0;
}

void check_unsupported_features(const json& j) {
  if (const json* scaling = field(j, "rope_scaling"); scaling && !is_default_rope(*scaling)) {
    const json* kind = rope_kind(*scaling);
    unsupported("rope_scaling " + (kind ? "of type " + json_shown(*kind) : json_shown(*scaling)) +
                " is not supported (only none or \"default\")");
  }
  check_full_rotary(j, "partial_rotary_factor");
  // A Mixtral-style config can name model_type llama; its experts have no dense FFN to load.
  if (const auto experts = get_i32(j, "num_local_experts"); experts && *experts > 0) {
    unsupported("mixture-of-experts models (" + std::to_string(*experts) +
                " experts) are not supported (num_local_experts)");
  }
  if (const json* act = field(j, "hidden_act")) {
    if (!act->is_string() || act->get<std::string>() != "silu") {
      unsupported("hidden_act " + json_shown(*act) + " is not supported (silu is)");
    }
  }
  if (get_bool(j, "attention_bias").value_or(false))
    unsupported("attention_bias true is not supported");
  if (get_bool(j, "mlp_bias").value_or(false)) unsupported("mlp_bias true is not supported");
}

void read_tokenizer_config(std::string_view text, ModelConfig& c) {
  if (text.empty()) return;
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    fail(Status::bad_model, "tokenizer_config.json: not a JSON object");
  }
  if (const json* t = field(j, "chat_template")) {
    if (t->is_string()) {
      c.chat_template = t->get<std::string>();
    } else if (t->is_array()) {  // newer files list named templates; the default one applies
      for (const json& entry : *t) {
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string()) {
          c.chat_template = entry["template"].get<std::string>();
        }
      }
    } else {
      fail(Status::bad_model,
           "tokenizer_config.json: chat_template is neither a string nor a list");
    }
  }
  if (const json* b = field(j, "add_bos_token")) {
    if (!b->is_boolean())
      fail(Status::bad_model, "tokenizer_config.json: add_bos_token is not a boolean");
    c.add_bos = b->get<bool>();
  }
}

}  // namespace

HfConfig parse_hf_config(std::string_view config_json, std::string_view tokenizer_config_json,
                         std::string name) {
  const json j =
      json::parse(config_json.begin(), config_json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("not valid JSON");
  if (!j.is_object()) bad("not a JSON object");
  check_architecture(j);
  check_unsupported_features(j);

  HfConfig out;
  ModelConfig& c = out.config;
  c.architecture = "llama";
  c.name = std::move(name);
  c.n_vocab = require_i32(j, "vocab_size");
  c.dim = require_i32(j, "hidden_size");
  c.hidden_dim = require_i32(j, "intermediate_size");
  c.n_layers = require_i32(j, "num_hidden_layers");
  c.n_heads = require_i32(j, "num_attention_heads");
  c.n_kv_heads = get_i32(j, "num_key_value_heads").value_or(c.n_heads);
  if (const auto hd = get_i32(j, "head_dim")) {
    c.head_dim = *hd;
  } else {
    if (c.n_heads <= 0)
      bad("num_attention_heads = " + std::to_string(c.n_heads) + " must be positive");
    if (c.dim % c.n_heads != 0) {
      bad("hidden_size " + std::to_string(c.dim) + " is not divisible by num_attention_heads " +
          std::to_string(c.n_heads));
    }
    c.head_dim = c.dim / c.n_heads;
  }
  c.context_length = require_i32(j, "max_position_embeddings");
  const auto eps = get_number(j, "rms_norm_eps");
  if (!eps) bad("rms_norm_eps is missing");
  c.rms_eps = float(*eps);
  c.rope_theta = float(rope_theta(j));
  c.sliding_window = get_i32(j, "sliding_window").value_or(0);
  const std::vector<int32_t> bos = get_token_ids(j, "bos_token_id");
  check_in_vocabulary(bos, "bos_token_id", c.n_vocab);
  if (!bos.empty()) out.bos_id = bos.front();
  out.eos_ids = get_token_ids(j, "eos_token_id");
  check_in_vocabulary(out.eos_ids, "eos_token_id", c.n_vocab);
  c.bos_id = out.bos_id.value_or(c.bos_id);
  if (!out.eos_ids.empty()) c.eos_id = out.eos_ids.front();
  c.pad_id = pad_id_or_none(get_i32(j, "pad_token_id", -1).value_or(c.pad_id), c.n_vocab,
                            "config.json: pad_token_id");
  out.tie_word_embeddings = get_bool(j, "tie_word_embeddings").value_or(false);
  read_tokenizer_config(tokenizer_config_json, c);
  return out;
}

std::vector<int32_t> parse_generation_eos_ids(std::string_view generation_config_json) {
  const json j = json::parse(generation_config_json.begin(), generation_config_json.end(), nullptr,
                             /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) bad_in(kGenerationConfigFile, "not a JSON object");
  return get_token_ids(j, "eos_token_id", kGenerationConfigFile);
}

}  // namespace parley::model

#include "model/gguf_metadata.h"

#include <algorithm>
#include <array>
#include <optional>
#include <limits>

#include "common/error.h"
#include "common/shown_number.h"

namespace parley::model {

namespace {

[[noreturn]] void bad(const std::string& what) { fail(Status::bad_model, "GGUF: " + what); }

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
constexpr int32_t kTypeUndefined = 0;
constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeUnknown = 2;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeByte = 6;

std::string key_text(std::string_view key) { return "metadata key '" + std::string(key) + "'"; }

std::optional<int32_t> get_i32(const GgufFile& f, std::string_view key, int64_t min = 0) {
  const auto v = f.get_int(key);
  if (!v) return std::nullopt;
  if (*v < min || *v > std::numeric_limits<int32_t>::max()) {
    bad(key_text(key) + " = " + std::to_string(*v) + " is out of range");
  }
  return int32_t(*v);
}

int32_t require_i32(const GgufFile& f, std::string_view key) {
  const auto v = get_i32(f, key);
  if (!v) bad(key_text(key) + " is missing");
  return *v;
}

float require_float(const GgufFile& f, std::string_view key) {
  const auto v = f.get_float(key);
  if (!v) bad(key_text(key) + " is missing");
  return float(*v);
}

[[noreturn]] void rope_scaling_unsupported(const std::string& what) {
  fail(Status::unsupported, "GGUF: " + what + " is not supported (Parley runs plain RoPE)");
}

// llama.cpp's RoPE scaling as it reads the keys: the type defaults to "linear", which divides
// positions by rope.scaling.factor (else the older rope.scale_linear; 0 or 1 is no scaling),
// "none" never scales, and attn_factor multiplies every cos and sin whatever the type. Only
// what would change plain RoPE is refused: linear scaling by 1, and the YaRN keys
// (original_context_length, ...) without YaRN, change nothing.
void check_rope_scaling(const GgufFile& f) {
  const auto type = f.get_string("llama.rope.scaling.type");
  const bool linear = !type || *type == "linear";
  if (!linear && *type != "none") {
    rope_scaling_unsupported("llama.rope.scaling.type '" + std::string(*type) + "'");
  }
  if (linear) {
    const std::string_view key = f.find("llama.rope.scaling.factor")
                                     ? "llama.rope.scaling.factor"
                                     : "llama.rope.scale_linear";
    const auto factor = f.get_float(key);
    // llama.cpp reads the factor as a float.
    if (factor && float(*factor) != 0.0f && float(*factor) != 1.0f) {
      rope_scaling_unsupported(std::string(key) + " " + shown_float(*factor) +
                               (type ? " (linear RoPE scaling)"
                                     : " (linear RoPE scaling, as llama.cpp reads a factor "
                                       "without a type)"));
    }
  }
  const auto attn = f.get_float("llama.rope.scaling.attn_factor");
  if (attn && float(*attn) != 1.0f) {
    rope_scaling_unsupported("llama.rope.scaling.attn_factor " + shown_float(*attn) +
                             " (a factor on RoPE's cos and sin)");
  }
}

void read_hyperparameters(const GgufFile& f, ModelConfig& c) {
  const auto arch = f.get_string("general.architecture");
  if (!arch) bad(key_text("general.architecture") + " is missing");
  if (*arch != "llama") {
    fail(Status::unsupported,
         "GGUF: architecture '" + std::string(*arch) + "' is not supported (llama is)");
  }
  if (const auto experts = get_i32(f, "llama.expert_count"); experts && *experts > 0) {
    fail(Status::unsupported, "GGUF: mixture-of-experts models (" + std::to_string(*experts) +
                                  " experts) are not supported (llama.expert_count)");
  }
  c.architecture = "llama";
  if (const auto name = f.get_string("general.name")) c.name = std::string(*name);
  c.dim = require_i32(f, "llama.embedding_length");
  c.hidden_dim = require_i32(f, "llama.feed_forward_length");
  c.n_layers = require_i32(f, "llama.block_count");
  c.n_heads = require_i32(f, "llama.attention.head_count");
  c.n_kv_heads = get_i32(f, "llama.attention.head_count_kv").value_or(c.n_heads);
  c.context_length = require_i32(f, "llama.context_length");
  c.rms_eps = require_float(f, "llama.attention.layer_norm_rms_epsilon");
  c.rope_theta = float(f.get_float("llama.rope.freq_base").value_or(10000.0));
  c.sliding_window = get_i32(f, "llama.attention.sliding_window").value_or(0);

  if (const auto hd = get_i32(f, "llama.attention.key_length")) {
    c.head_dim = *hd;
    const auto vd = get_i32(f, "llama.attention.value_length");
    if (vd && *vd != *hd) {
      fail(Status::unsupported, "GGUF: llama.attention.value_length " + std::to_string(*vd) +
                                    " != key_length " + std::to_string(*hd) + " is not supported");
    }
  } else {
    if (c.n_heads <= 0)
      bad(key_text("llama.attention.head_count") + " = " + std::to_string(c.n_heads) +
          " must be positive");
    if (c.dim % c.n_heads != 0) {
      bad("llama.embedding_length " + std::to_string(c.dim) +
          " is not divisible by llama.attention.head_count " + std::to_string(c.n_heads));
    }
    c.head_dim = c.dim / c.n_heads;
  }
  if (const auto rot = get_i32(f, "llama.rope.dimension_count"); rot && *rot != c.head_dim) {
    fail(Status::unsupported, "GGUF: llama.rope.dimension_count " + std::to_string(*rot) +
                                  " != head dim " + std::to_string(c.head_dim) +
                                  " (partial RoPE) is not supported");
  }
  check_rope_scaling(f);
}

void check_length(const GgufValue& array, uint64_t n_vocab, const char* key) {
  if (array.count != n_vocab) {
    bad(key_text(key) + " has " + std::to_string(array.count) + " entries, the vocabulary " +
        std::to_string(n_vocab));
  }
}

void read_special_ids(const GgufFile& f, GgufVocab& v) {
  v.bos_id = get_i32(f, "tokenizer.ggml.bos_token_id", -1).value_or(v.bos_id);
  v.eos_id = get_i32(f, "tokenizer.ggml.eos_token_id", -1).value_or(v.eos_id);
  v.unk_id = get_i32(f, "tokenizer.ggml.unknown_token_id", -1).value_or(v.unk_id);
}

void set_type(std::vector<int32_t>& types, int32_t id, int32_t type) {
  if (id >= 0 && size_t(id) < types.size()) types[size_t(id)] = type;
}

// The piece "<unk>" where there is one, else the default id.
int32_t unk_piece_id(const GgufVocab& v) {
  const auto unk = std::find(v.tokens.begin(), v.tokens.end(), "<unk>");
  return unk == v.tokens.end() ? v.unk_id : int32_t(unk - v.tokens.begin());
}

// The byte a piece "<0xNN>" stands for, as sentencepiece writes byte pieces (upper-case hex).
std::optional<int> byte_of_piece(const std::string& piece) {
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  if (piece.size() != 6 || !piece.starts_with("<0x") || !hex(piece[3]) || !hex(piece[4]) ||
      piece[5] != '>')
    return std::nullopt;
  return std::stoi(piece.substr(3, 2), nullptr, 16);
}

// Marks the pieces <0x00>..<0xFF> BYTE when each is there once, as sentencepiece's byte
// fallback needs them all.
void type_byte_pieces(const GgufVocab& v, std::vector<int32_t>& types) {
  std::vector<size_t> ids;
  std::array<bool, 256> seen{};
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const auto byte = byte_of_piece(v.tokens[i]);
    if (!byte) continue;
    if (seen[size_t(*byte)]) return;
    seen[size_t(*byte)] = true;
    ids.push_back(i);
  }
  if (ids.size() != seen.size()) return;
  for (size_t id : ids) types[id] = kTypeByte;
}

// GGUF may leave token_type out; llama.cpp then reads every token as normal, but still knows
// the unknown, BOS and EOS tokens by their ids, which sentencepiece needs typed, and its byte
// fallback finds the byte pieces by their text, as a BYTE type lets sentencepiece's do: a
// newline is <0x0A>, not the unknown token.
std::vector<int32_t> types_from_special_ids(const GgufVocab& v) {
  std::vector<int32_t> types(v.tokens.size(), kTypeNormal);
  type_byte_pieces(v, types);
  set_type(types, v.unk_id, kTypeUnknown);
  set_type(types, v.bos_id, kTypeControl);
  set_type(types, v.eos_id, kTypeControl);
  return types;
}

// After read_special_ids.
void read_token_types(const GgufFile& f, GgufVocab& v) {
  const GgufValue* types = f.get_array("tokenizer.ggml.token_type");
  if (!types) {
    if (!f.get_int("tokenizer.ggml.unknown_token_id")) v.unk_id = unk_piece_id(v);
    v.token_types = types_from_special_ids(v);
    return;
  }
  const uint64_t n = v.tokens.size();
  check_length(*types, n, "tokenizer.ggml.token_type");
  v.token_types.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t t = gguf_array_int(*types, i, "tokenizer.ggml.token_type");
    if (t < 0 || t > std::numeric_limits<int32_t>::max()) {
      bad(key_text("tokenizer.ggml.token_type") + " element " + std::to_string(i) + " = " +
          std::to_string(t) + " is out of range");
    }
    // llama.cpp reads "undefined" as a normal token.
    v.token_types[i] = t == kTypeUndefined ? kTypeNormal : int32_t(t);
  }
}

void read_vocab(const GgufFile& f, ModelConfig& c, GgufVocab& v) {
  const auto model = f.get_string("tokenizer.ggml.model");
  if (!model) bad(key_text("tokenizer.ggml.model") + " is missing");
  if (*model != "llama") {
    fail(Status::unsupported, "GGUF: tokenizer.ggml.model '" + std::string(*model) +
                                  "' is not supported (llama, i.e. sentencepiece, is)");
  }
  v.model = "llama";
  const GgufValue* tokens = f.get_array("tokenizer.ggml.tokens");
  if (!tokens) bad(key_text("tokenizer.ggml.tokens") + " is missing");
  if (tokens->elem_type != GgufValueType::string)
    bad(key_text("tokenizer.ggml.tokens") + " is not an array of strings");
  if (const auto n = get_i32(f, "llama.vocab_size")) {
    c.n_vocab = *n;
  } else {
    if (tokens->count > uint64_t(std::numeric_limits<int32_t>::max()))
      bad("tokenizer.ggml.tokens is too long");
    c.n_vocab = int32_t(tokens->count);
  }
  const uint64_t n = uint64_t(c.n_vocab);
  check_length(*tokens, n, "tokenizer.ggml.tokens");
  v.tokens.assign(tokens->strings.begin(), tokens->strings.end());

  if (const GgufValue* scores = f.get_array("tokenizer.ggml.scores")) {
    check_length(*scores, n, "tokenizer.ggml.scores");
    v.scores.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      v.scores[i] = float(gguf_array_float(*scores, i, "tokenizer.ggml.scores"));
  }
  read_special_ids(f, v);
  read_token_types(f, v);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix);
  v.remove_extra_whitespaces =
      f.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(v.remove_extra_whitespaces);
  c.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
  c.bos_id = v.bos_id;
  c.eos_id = v.eos_id;
  c.unk_id = v.unk_id;
  // Any integer is taken, however large or negative: llama.cpp reads the id as uint32 and
  // only warns when it is outside the vocabulary.
  constexpr std::string_view kPadKey = "tokenizer.ggml.padding_token_id";
  v.pad_id = pad_id_or_none(f.get_int(kPadKey).value_or(v.pad_id), c.n_vocab,
                            "GGUF: " + std::string(kPadKey));
  c.pad_id = v.pad_id;
  if (const auto tmpl = f.get_string("tokenizer.chat_template"))
    c.chat_template = std::string(*tmpl);
}

// llama.cpp ends generation on these as on the EOS (Llama 3's <|eot_id|>, <|eom_id|>).
std::vector<NamedTokenId> read_more_end_ids(const GgufFile& f) {
  std::vector<NamedTokenId> ids;
  for (std::string_view key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (const auto id = get_i32(f, key)) ids.push_back({*id, std::string(key)});
  }
  return ids;
}

}  // namespace

GgufModelInfo read_gguf_metadata(const GgufFile& file) {
  GgufModelInfo info;
  read_hyperparameters(file, info.config);
  read_vocab(file, info.config, info.vocab);
  info.more_end_ids = read_more_end_ids(file);
  return info;
}

}  // namespace parley::model

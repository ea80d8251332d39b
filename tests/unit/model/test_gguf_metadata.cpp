#include <doctest/doctest.h>

#include <functional>

#include "support/error_check.h"
#include "model/gguf_metadata.h"
#include "support/gguf_builder.h"
#include "support/log_capture.h"
#include "support/synth_model.h"

using parley::Status;
using parley::model::parse_gguf;
using parley::model::read_gguf_metadata;
using parley::test::GgufBuilder;
namespace gt = parley::test::gguf_type;

namespace {

using KvWriter = std::function<void(GgufBuilder&)>;

// Metadata of a small llama model, as an editable list of entries.
class Metadata {
 public:
  Metadata() {
    const auto vocab = parley::test::make_spm_vocab(300);
    set("general.architecture", [](GgufBuilder& b) { b.kv_str("general.architecture", "llama"); });
    set("general.name", [](GgufBuilder& b) { b.kv_str("general.name", "tiny"); });
    u32("llama.vocab_size", 300);
    u32("llama.context_length", 128);
    u32("llama.embedding_length", 48);
    u32("llama.block_count", 3);
    u32("llama.feed_forward_length", 100);
    u32("llama.attention.head_count", 6);
    u32("llama.attention.head_count_kv", 2);
    set("llama.attention.layer_norm_rms_epsilon",
        [](GgufBuilder& b) { b.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f); });
    set("llama.rope.freq_base",
        [](GgufBuilder& b) { b.kv_f32("llama.rope.freq_base", 500000.0f); });
    set("tokenizer.ggml.model", [](GgufBuilder& b) { b.kv_str("tokenizer.ggml.model", "llama"); });
    set("tokenizer.ggml.tokens",
        [vocab](GgufBuilder& b) { b.kv_strings("tokenizer.ggml.tokens", vocab.tokens); });
    set("tokenizer.ggml.scores",
        [vocab](GgufBuilder& b) { b.kv_f32s("tokenizer.ggml.scores", vocab.scores); });
    set("tokenizer.ggml.token_type",
        [vocab](GgufBuilder& b) { b.kv_i32s("tokenizer.ggml.token_type", vocab.types); });
    u32("tokenizer.ggml.bos_token_id", 1);
    u32("tokenizer.ggml.eos_token_id", 2);
    u32("tokenizer.ggml.unknown_token_id", 0);
  }

  Metadata& set(const std::string& key, KvWriter w) {
    for (auto& [k, writer] : kvs_) {
      if (k == key) {
        writer = std::move(w);
        return *this;
      }
    }
    kvs_.emplace_back(key, std::move(w));
    return *this;
  }
  Metadata& u32(const std::string& key, uint32_t v) {
    return set(key, [key, v](GgufBuilder& b) { b.kv_u32(key, v); });
  }
  Metadata& f32(const std::string& key, float v) {
    return set(key, [key, v](GgufBuilder& b) { b.kv_f32(key, v); });
  }
  Metadata& i32s(const std::string& key, const std::vector<int32_t>& v) {
    return set(key, [key, v](GgufBuilder& b) { b.kv_i32s(key, v); });
  }
  Metadata& strings(const std::string& key, const std::vector<std::string>& v) {
    return set(key, [key, v](GgufBuilder& b) { b.kv_strings(key, v); });
  }
  Metadata& str(const std::string& key, const std::string& v) {
    return set(key, [key, v](GgufBuilder& b) { b.kv_str(key, v); });
  }
  Metadata& erase(const std::string& key) {
    std::erase_if(kvs_, [&](const auto& kv) { return kv.first == key; });
    return *this;
  }

  std::string bytes() const {
    GgufBuilder b;
    b.header(0, kvs_.size());
    for (const auto& kv : kvs_) kv.second(b);
    return b.bytes();
  }

 private:
  std::vector<std::pair<std::string, KvWriter>> kvs_;
};

parley::model::GgufModelInfo read(const Metadata& m) {
  const std::string bytes = m.bytes();
  return read_gguf_metadata(parse_gguf(parley::test::as_span(bytes)));
}

}  // namespace

TEST_CASE("GGUF metadata: hyperparameters, vocabulary and defaults") {
  const auto info = read(Metadata());
  const auto& c = info.config;
  CHECK(c.architecture == "llama");
  CHECK(c.name == "tiny");
  CHECK(c.n_vocab == 300);
  CHECK(c.dim == 48);
  CHECK(c.hidden_dim == 100);
  CHECK(c.n_layers == 3);
  CHECK(c.n_heads == 6);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 8);
  CHECK(c.context_length == 128);
  CHECK(c.rms_eps == 1e-6f);
  CHECK(c.rope_theta == 500000.0f);
  CHECK(c.sliding_window == 0);
  CHECK(c.add_bos);
  CHECK(c.chat_template.empty());
  CHECK_NOTHROW(c.validate());
  const auto& v = info.vocab;
  CHECK(v.model == "llama");
  REQUIRE(v.tokens.size() == 300);
  CHECK(v.tokens[1] == "<s>");
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.token_types[0] == 2);
  CHECK(v.token_types[258] == 6);
  CHECK(v.scores.size() == 300);
  CHECK(v.add_space_prefix);  // llama.cpp's default when the key is absent
  CHECK_FALSE(v.remove_extra_whitespaces);
}

TEST_CASE("GGUF metadata: optional keys and their defaults") {
  Metadata m;
  m.erase("llama.attention.head_count_kv").erase("llama.rope.freq_base").erase("llama.vocab_size");
  m.erase("tokenizer.ggml.scores").erase("tokenizer.ggml.token_type");
  const auto info = read(m);
  CHECK(info.config.n_kv_heads == 6);
  CHECK(info.config.rope_theta == 10000.0f);
  CHECK(info.config.n_vocab == 300);  // the length of tokenizer.ggml.tokens
  CHECK(info.vocab.scores.empty());
  CHECK(info.vocab.token_types.size() == 300);

  Metadata n;
  n.u32("llama.attention.key_length", 16).u32("llama.attention.value_length", 16);
  n.u32("llama.attention.sliding_window", 64).u32("tokenizer.ggml.padding_token_id", 5);
  n.str("tokenizer.chat_template", "{{ messages }}");
  n.set("tokenizer.ggml.add_bos_token",
        [](GgufBuilder& b) { b.kv_bool("tokenizer.ggml.add_bos_token", false); });
  n.set("tokenizer.ggml.add_space_prefix",
        [](GgufBuilder& b) { b.kv_bool("tokenizer.ggml.add_space_prefix", false); });
  n.set("tokenizer.ggml.remove_extra_whitespaces",
        [](GgufBuilder& b) { b.kv_bool("tokenizer.ggml.remove_extra_whitespaces", true); });
  n.str("llama.rope.scaling.type", "none");
  const auto j = read(n);
  CHECK(j.config.head_dim == 16);
  CHECK(j.config.sliding_window == 64);
  CHECK(j.config.pad_id == 5);
  CHECK(j.vocab.pad_id == 5);
  CHECK(j.config.chat_template == "{{ messages }}");
  CHECK_FALSE(j.config.add_bos);
  CHECK_FALSE(j.vocab.add_space_prefix);
  CHECK(j.vocab.remove_extra_whitespaces);
}

TEST_CASE("GGUF metadata: end-of-turn and end-of-message ids also end a reply") {
  CHECK(read(Metadata()).more_end_ids.empty());

  Metadata m;
  m.u32("tokenizer.ggml.eot_token_id", 7).u32("tokenizer.ggml.eom_token_id", 9);
  const auto info = read(m);
  REQUIRE(info.more_end_ids.size() == 2);
  CHECK(info.more_end_ids[0].id == 7);
  CHECK(info.more_end_ids[0].source == "tokenizer.ggml.eot_token_id");
  CHECK(info.more_end_ids[1].id == 9);
  CHECK(info.more_end_ids[1].source == "tokenizer.ggml.eom_token_id");
  CHECK(info.config.eos_id == 2);  // the EOS stays the EOS

  Metadata eom_only;
  eom_only.u32("tokenizer.ggml.eom_token_id", 4);
  const auto eom = read(eom_only);
  REQUIRE(eom.more_end_ids.size() == 1);
  CHECK(eom.more_end_ids[0].id == 4);

  Metadata huge;
  huge.u32("tokenizer.ggml.eot_token_id", 0xFFFFFFFFu);
  CHECK_PARLEY_ERROR(read(huge), Status::bad_model, "tokenizer.ggml.eot_token_id", "out of range");
  Metadata text;
  text.str("tokenizer.ggml.eom_token_id", "4");
  CHECK_PARLEY_ERROR(read(text), Status::bad_model, "tokenizer.ggml.eom_token_id");
}

TEST_CASE("GGUF metadata: integers of any integer type, floats as float32 or float64") {
  Metadata m;
  m.set("llama.block_count", [](GgufBuilder& b) { b.kv_u8("llama.block_count", 3); });
  m.set("llama.embedding_length", [](GgufBuilder& b) { b.kv_i16("llama.embedding_length", 48); });
  m.set("llama.context_length", [](GgufBuilder& b) { b.kv_u64("llama.context_length", 128); });
  m.set("llama.feed_forward_length",
        [](GgufBuilder& b) { b.kv_i64("llama.feed_forward_length", 100); });
  m.set("llama.attention.layer_norm_rms_epsilon",
        [](GgufBuilder& b) { b.kv_f64("llama.attention.layer_norm_rms_epsilon", 1e-5); });
  const auto info = read(m);
  CHECK(info.config.n_layers == 3);
  CHECK(info.config.dim == 48);
  CHECK(info.config.context_length == 128);
  CHECK(info.config.hidden_dim == 100);
  CHECK(info.config.rms_eps == 1e-5f);
}

TEST_CASE("GGUF metadata: wrong types and out-of-range values name the key") {
  CHECK_PARLEY_ERROR(read(Metadata().str("llama.block_count", "5")), Status::bad_model,
                     "llama.block_count");
  CHECK_PARLEY_ERROR(read(Metadata().set("llama.context_length",
                                         [](GgufBuilder& b) {
                                           b.kv_u64("llama.context_length", uint64_t(1) << 40);
                                         })),
                     Status::bad_model, "llama.context_length", "out of range");
  CHECK_PARLEY_ERROR(
      read(Metadata().set("llama.block_count",
                          [](GgufBuilder& b) { b.kv_i32("llama.block_count", -1); })),
      Status::bad_model, "llama.block_count", "out of range");
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.attention.layer_norm_rms_epsilon", 1)),
                     Status::bad_model, "llama.attention.layer_norm_rms_epsilon");
  CHECK_PARLEY_ERROR(read(Metadata().u32("general.architecture", 1)), Status::bad_model,
                     "general.architecture");
  CHECK_PARLEY_ERROR(
      read(Metadata().set(
          "tokenizer.ggml.tokens",
          [](GgufBuilder& b) { b.kv_f32s("tokenizer.ggml.tokens", std::vector<float>(300)); })),
      Status::bad_model, "tokenizer.ggml.tokens");
  CHECK_PARLEY_ERROR(
      read(Metadata().set(
          "tokenizer.ggml.scores",
          [](GgufBuilder& b) { b.kv_i32s("tokenizer.ggml.scores", std::vector<int32_t>(300)); })),
      Status::bad_model, "tokenizer.ggml.scores");
  CHECK_PARLEY_ERROR(
      read(Metadata().set(
          "tokenizer.ggml.token_type",
          [](GgufBuilder& b) { b.kv_f32s("tokenizer.ggml.token_type", std::vector<float>(300)); })),
      Status::bad_model, "tokenizer.ggml.token_type");
  CHECK_PARLEY_ERROR(read(Metadata().set("tokenizer.ggml.token_type",
                                         [](GgufBuilder& b) {
                                           b.kv_i32s("tokenizer.ggml.token_type",
                                                     std::vector<int32_t>(300, -4));
                                         })),
                     Status::bad_model, "tokenizer.ggml.token_type", "element 0");
  CHECK_PARLEY_ERROR(read(Metadata().str("tokenizer.ggml.add_bos_token", "yes")), Status::bad_model,
                     "tokenizer.ggml.add_bos_token");
}

TEST_CASE("GGUF metadata: missing required keys name the key") {
  for (const char* key :
       {"general.architecture", "llama.embedding_length", "llama.feed_forward_length",
        "llama.block_count", "llama.attention.head_count", "llama.context_length",
        "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model",
        "tokenizer.ggml.tokens"}) {
    CAPTURE(key);
    CHECK_PARLEY_ERROR(read(Metadata().erase(key)), Status::bad_model, key, "missing");
  }
}

TEST_CASE("GGUF metadata: array lengths must equal the vocabulary size") {
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.vocab_size", 301)), Status::bad_model,
                     "tokenizer.ggml.tokens", "300 entries");
  CHECK_PARLEY_ERROR(
      read(Metadata().set(
          "tokenizer.ggml.scores",
          [](GgufBuilder& b) { b.kv_f32s("tokenizer.ggml.scores", std::vector<float>(299)); })),
      Status::bad_model, "tokenizer.ggml.scores", "299 entries");
  CHECK_PARLEY_ERROR(
      read(Metadata().set(
          "tokenizer.ggml.token_type",
          [](GgufBuilder& b) { b.kv_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(1)); })),
      Status::bad_model, "tokenizer.ggml.token_type", "1 entries");
}

TEST_CASE("GGUF metadata: head size must follow from the embedding when not given") {
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.attention.head_count", 7)), Status::bad_model,
                     "llama.embedding_length", "llama.attention.head_count");
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.attention.head_count", 0)), Status::bad_model,
                     "llama.attention.head_count");
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.rope.dimension_count", 4)), Status::unsupported,
                     "llama.rope.dimension_count");
  CHECK_PARLEY_ERROR(
      read(Metadata().u32("llama.attention.key_length", 16).u32("llama.attention.value_length", 8)),
      Status::unsupported, "llama.attention.value_length");
}

TEST_CASE("GGUF metadata: other architectures, tokenizers and RoPE scaling are unsupported") {
  CHECK_PARLEY_ERROR(read(Metadata().str("general.architecture", "gpt2")), Status::unsupported,
                     "architecture 'gpt2'");
  CHECK_PARLEY_ERROR(read(Metadata().str("tokenizer.ggml.model", "gpt2")), Status::unsupported,
                     "tokenizer.ggml.model 'gpt2'");
  CHECK_PARLEY_ERROR(read(Metadata().str("llama.rope.scaling.type", "yarn")), Status::unsupported,
                     "llama.rope.scaling.type 'yarn'");
}

// Linear scaling divides positions by the factor: by 1 (or llama.cpp's 0, "not set") it
// changes nothing.
TEST_CASE("GGUF metadata: linear RoPE scaling is refused only with a factor other than 1") {
  Metadata linear;
  linear.str("llama.rope.scaling.type", "linear");
  CHECK_NOTHROW(read(linear));
  CHECK_NOTHROW(read(Metadata(linear).f32("llama.rope.scaling.factor", 1.0f)));
  CHECK_NOTHROW(read(Metadata(linear).f32("llama.rope.scale_linear", 0.0f)));
  CHECK_PARLEY_ERROR(read(Metadata(linear).f32("llama.rope.scaling.factor", 4.0f)),
                     Status::unsupported, "llama.rope.scaling.factor 4 (linear RoPE scaling)");
  CHECK_PARLEY_ERROR(read(Metadata(linear).f32("llama.rope.scale_linear", 2.0f)),
                     Status::unsupported, "llama.rope.scale_linear 2 (linear RoPE scaling)");
}

// llama.cpp reads a scaling factor without a type as linear scaling, from the older key too.
TEST_CASE("GGUF metadata: a RoPE scaling factor without a type is linear scaling, unsupported") {
  for (const char* key : {"llama.rope.scaling.factor", "llama.rope.scale_linear"}) {
    CAPTURE(key);
    CHECK_PARLEY_ERROR(read(Metadata().f32(key, 4.0f)), Status::unsupported,
                       std::string(key) + " 4 (linear RoPE scaling", "not supported");
    CHECK_PARLEY_ERROR(read(Metadata().f32(key, 0.5f)), Status::unsupported, key);
    // 1, and 0 (llama.cpp's "not set"), scale nothing.
    CHECK(read(Metadata().f32(key, 1.0f)).config.rope_theta == 500000.0f);
    CHECK(read(Metadata().f32(key, 0.0f)).config.rope_theta == 500000.0f);
  }
  // The older key counts only without the newer one, as in llama.cpp.
  CHECK_NOTHROW(read(
      Metadata().f32("llama.rope.scaling.factor", 1.0f).f32("llama.rope.scale_linear", 4.0f)));
  CHECK_PARLEY_ERROR(
      read(Metadata().f32("llama.rope.scaling.factor", 2.0f).f32("llama.rope.scale_linear", 1.0f)),
      Status::unsupported, "llama.rope.scaling.factor 2");
  // Type "none" never scales, whatever the factor.
  Metadata none;
  none.str("llama.rope.scaling.type", "none").f32("llama.rope.scaling.factor", 4.0f);
  CHECK_NOTHROW(read(none));
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.rope.scaling.factor", 4)), Status::bad_model,
                     "llama.rope.scaling.factor");
}

TEST_CASE("GGUF metadata: other RoPE scaling keys are refused only where they change RoPE") {
  // attn_factor multiplies every cos and sin, whatever the type.
  for (const char* type : {"", "none"}) {
    CAPTURE(type);
    Metadata m;
    if (*type) m.str("llama.rope.scaling.type", type);
    CHECK_PARLEY_ERROR(read(m.f32("llama.rope.scaling.attn_factor", 2.0f)), Status::unsupported,
                       "llama.rope.scaling.attn_factor 2");
    CHECK_NOTHROW(read(m.f32("llama.rope.scaling.attn_factor", 1.0f)));
  }
  // YaRN's own keys change nothing without YaRN.
  Metadata yarn_keys;
  yarn_keys.u32("llama.rope.scaling.original_context_length", 64);
  yarn_keys.set("llama.rope.scaling.finetuned",
                [](GgufBuilder& b) { b.kv_bool("llama.rope.scaling.finetuned", true); });
  yarn_keys.f32("llama.rope.scaling.yarn_log_multiplier", 0.1f);
  CHECK(read(yarn_keys).config.context_length == 128);
}

TEST_CASE("GGUF metadata: mixture-of-experts models are unsupported, expert_count 0 is not one") {
  CHECK_PARLEY_ERROR(read(Metadata().u32("llama.expert_count", 8)), Status::unsupported,
                     "mixture-of-experts models (8 experts) are not supported",
                     "llama.expert_count");
  CHECK(read(Metadata().u32("llama.expert_count", 0)).config.n_layers == 3);
}

TEST_CASE("GGUF metadata: a padding id outside the vocabulary is dropped with a warning") {
  parley::test::LogCapture log;
  const auto info = read(Metadata().u32("tokenizer.ggml.padding_token_id", 300));
  CHECK(info.config.pad_id == -1);
  CHECK(info.vocab.pad_id == -1);
  CHECK(log.count("tokenizer.ggml.padding_token_id 300 is outside the vocabulary [0, 300)") == 1);
  CHECK_NOTHROW(info.config.validate());
  CHECK(read(Metadata().u32("tokenizer.ggml.padding_token_id", 299)).vocab.pad_id == 299);
  CHECK(log.count("padding_token_id") == 1);
}

// llama.cpp reads the id as uint32 and warns: 0xFFFFFFFF (a converter's "none") loads there.
TEST_CASE("GGUF metadata: a padding id of any integer outside the vocabulary is dropped too") {
  parley::test::LogCapture log;
  const struct {
    uint32_t type;
    int64_t value;
  } cases[] = {{gt::UINT32, 0xFFFFFFFFll}, {gt::UINT32, 0x80000000ll}, {gt::INT32, -100},
               {gt::INT64, int64_t(1) << 40}, {gt::INT32, -1}};
  for (const auto& c : cases) {
    CAPTURE(c.value);
    Metadata m;
    m.set("tokenizer.ggml.padding_token_id", [c](GgufBuilder& b) {
      if (c.type == gt::UINT32) b.kv_u32("tokenizer.ggml.padding_token_id", uint32_t(c.value));
      if (c.type == gt::INT32) b.kv_i32("tokenizer.ggml.padding_token_id", int32_t(c.value));
      if (c.type == gt::INT64) b.kv_i64("tokenizer.ggml.padding_token_id", c.value);
    });
    const auto info = read(m);
    CHECK(info.config.pad_id == -1);
    CHECK(info.vocab.pad_id == -1);
    CHECK_NOTHROW(info.config.validate());
    const std::string warning = "tokenizer.ggml.padding_token_id " + std::to_string(c.value) +
                                " is outside the vocabulary [0, 300): ignored";
    CHECK(log.count(warning) == (c.value == -1 ? 0 : 1));  // -1 says "none" as it is
  }
}

TEST_CASE("GGUF metadata: without token types, all are normal but UNK, BOS, EOS and bytes") {
  Metadata m;
  m.erase("tokenizer.ggml.token_type").u32("tokenizer.ggml.unknown_token_id", 7);
  m.u32("tokenizer.ggml.bos_token_id", 260).u32("tokenizer.ggml.eos_token_id", 261);
  const auto info = read(m);
  const auto& types = info.vocab.token_types;
  REQUIRE(types.size() == 300);
  CHECK(types[7] == 2);
  CHECK(types[260] == 3);
  CHECK(types[261] == 3);
  for (size_t id : {0, 1, 2, 299}) {
    CAPTURE(id);
    CHECK(types[id] == 1);
  }
  // llama.cpp's byte fallback finds <0x00>..<0xFF> by their text, as BYTE pieces are found.
  CHECK(types[3] == 6);
  CHECK(types[258] == 6);
  CHECK(info.config.unk_id == 7);
}

TEST_CASE("GGUF metadata: without token types or unknown_token_id, the UNK is the piece <unk>") {
  auto tokens = parley::test::make_spm_vocab(300).tokens;
  std::swap(tokens[0], tokens[280]);
  Metadata m;
  m.erase("tokenizer.ggml.unknown_token_id").strings("tokenizer.ggml.tokens", tokens);
  const auto typed = read(m);  // types given: the default id, as before
  CHECK(typed.vocab.unk_id == 0);

  m.erase("tokenizer.ggml.token_type");
  const auto info = read(m);
  CHECK(info.vocab.unk_id == 280);
  CHECK(info.config.unk_id == 280);
  REQUIRE(info.vocab.token_types.size() == 300);
  CHECK(info.vocab.token_types[280] == 2);
  CHECK(info.vocab.token_types[0] == 1);

  tokens[280] = "unk";  // no <unk> piece: llama.cpp's default id
  m.strings("tokenizer.ggml.tokens", tokens);
  CHECK(read(m).vocab.unk_id == 0);
}

TEST_CASE("GGUF metadata: token type 0 (undefined to llama.cpp) is a normal token") {
  auto types = parley::test::make_spm_vocab(300).types;
  types[270] = 0;
  const auto info = read(Metadata().i32s("tokenizer.ggml.token_type", types));
  CHECK(info.vocab.token_types[270] == 1);
  CHECK(info.vocab.token_types[0] == 2);
  CHECK(info.vocab.token_types[258] == 6);
}

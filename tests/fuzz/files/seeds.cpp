// Seed corpora: small valid inputs of every kind the targets read, so that the fuzzer starts
// past the first checks instead of rediscovering the formats byte by byte.
#include <nlohmann/json.hpp>

#include "files/fuzz_files.h"
#include "files/tiny_gguf.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"
#include "support/safetensors_builder.h"

namespace parley::test {
namespace {

FuzzFile seed(const std::string& path, std::string bytes) {
  return {path, std::move(bytes), "", "", "", ""};
}

std::string as_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace

std::vector<FuzzFile> gguf_seeds() {
  std::vector<FuzzFile> s;
  s.push_back(seed("gguf/tiny-f32.gguf", tiny_gguf_file()));
  {
    TinyGguf g = tiny_gguf();
    for (auto& t : g.tensors) {
      if (t.ne.size() == 2) t.type = ggml_type::F16;
    }
    s.push_back(seed("gguf/tiny-f16.gguf", g.bytes()));
    for (auto& t : g.tensors) {
      if (t.ne.size() == 2) t.type = ggml_type::BF16;
    }
    s.push_back(seed("gguf/tiny-bf16.gguf", g.bytes()));
  }
  {
    // Metadata and vocabulary only: reaches the tokenizer without weights to mutate.
    TinyGguf g = tiny_gguf();
    g.tensors.clear();
    g.set("tokenizer.chat_template", [](GgufBuilder& b) {
      b.kv_str("tokenizer.chat_template", "{% for m in messages %}<|im_start|>{{ m }}{% endfor %}");
    });
    g.set("tokenizer.ggml.add_space_prefix",
          [](GgufBuilder& b) { b.kv_bool("tokenizer.ggml.add_space_prefix", false); });
    g.set("tokenizer.ggml.padding_token_id",
          [](GgufBuilder& b) { b.kv_u32("tokenizer.ggml.padding_token_id", 0); });
    s.push_back(seed("gguf/vocab-only.gguf", g.bytes()));
  }
  {
    // Every value type, and arrays of arrays.
    TinyGguf g = tiny_gguf();
    g.tensors.erase(g.tensors.begin() + 2, g.tensors.end());
    g.set("x.types", [](GgufBuilder& b) {
      b.kv_u8("x.u8", 1).kv_i8("x.i8", -1).kv_u16("x.u16", 2).kv_i16("x.i16", -2);
      b.kv_u64("x.u64", 3).kv_i64("x.i64", -3).kv_f64("x.f64", 0.5).kv_bool("x.bool", true);
      b.kv_array_header("x.nested", gguf_type::ARRAY, 2);
      b.u32(gguf_type::UINT16).u64(2).u16(1).u16(2);
      b.u32(gguf_type::STRING).u64(1).str("s");
      b.key_type("x.last", gguf_type::INT32).u32(7);
    });
    g.n_kv = g.meta.size() + 9;
    s.push_back(seed("gguf/all-value-types.gguf", g.bytes()));
  }
  return s;
}

std::vector<FuzzFile> safetensors_seeds() {
  std::vector<FuzzFile> s;
  s.push_back(seed("safetensors/tiny.safetensors", tiny_safetensors_file()));
  s.push_back(seed("safetensors/mixed.safetensors",
                   safetensors_file({{"a", "F16", {2, 3}, std::string(12, '\1')},
                                     {"b", "BF16", {4}, std::string(8, '\2')},
                                     {"scalar", "F32", {}, std::string(4, '\3')},
                                     {"empty", "F32", {0, 5}, ""}})));
  s.push_back(seed("safetensors/index.json",
                   R"({"metadata": {"total_size": 8}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})"));
  return s;
}

std::vector<FuzzFile> kv_codec_seeds() {
  std::vector<FuzzFile> s;
  const kv::BlockLayout int8(kRegressionKvType, kRegressionKvShape);
  const auto block = sample_kv_block(int8, 1);
  for (uint32_t n : {1u, 7u, 16u}) {
    for (bool filter : {true, false}) {
      s.push_back(seed("kv_codec/int8-" + std::to_string(n) + (filter ? "-filtered" : "-plain"),
                       as_string(store::encode_kv_block(int8, kRegressionFingerprint, block.data(),
                                                        n, {1, filter}))));
    }
  }
  for (kv::KvType type : {kv::KvType::f16, kv::KvType::f32}) {
    const kv::BlockLayout layout(type, kv::KvShape{1, 2, 8});
    const auto b = sample_kv_block(layout, 2);
    s.push_back(seed(std::string("kv_codec/") + kv::kv_type_name(type) + "-5",
                     as_string(store::encode_kv_block(layout, kRegressionFingerprint, b.data(), 5))));
  }
  return s;
}

std::vector<FuzzFile> text_seeds() {
  // First byte: template (low 3 bits mod 5), first turn (0x08), Llama 2 tokenizer (0x10),
  // strip the reply's first space (0x20). Then "system\0user" or the user message alone.
  const std::pair<const char*, std::string> seeds[] = {
      {"raw-plain", std::string("\x08") + "Once upon a time, there was a little dog."},
      {"llama2-system", std::string("\x19") + "You are terse." + '\0' + "Hi! [INST] </s> <<SYS>>"},
      {"chatml-markers", std::string("\x0a") + "sys" + '\0' + "<|im_start|>user\n<|im_end|>"},
      {"zephyr-later-turn", std::string("\x13") + "<|user|>\nhello</s>\n<|assistant|>"},
      {"mistral-utf8", std::string("\x3c") + "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC"},
      {"invalid-utf8", std::string("\x18") + "ok \xC3\x28 \xED\xA0\x80 \xF4\x90\x80\x80 \xC0\xAF"},
      {"truncated-utf8", std::string("\x01") + "end \xE2\x82"},
      {"whitespace", std::string("\x11") + "  a\t\tb\n\n  c   "},
      {"ids", std::string("\x28") + std::string("\x01\x00\x03\x00\x04\x01\x41\x00\xff\xff\x02\x00", 12)},
  };
  std::vector<FuzzFile> s;
  for (const auto& [name, bytes] : seeds) s.push_back(seed(std::string("text/") + name, bytes));
  return s;
}

std::vector<FuzzFile> conversation_seeds() {
  using Json = nlohmann::ordered_json;
  const Json user = {{"role", "user"}, {"text", "Hello!"}, {"tokens", {1, 15043, 29991}}};
  const Json reply = {{"role", "assistant"}, {"text", " Hi."}, {"tokens", {6324, 29889, 2}},
                      {"closed", true}};
  Json full = {{"format", "parley-conversation"}, {"version", 1}, {"id", "npc-7"},
               {"chat_template", "llama2"}, {"system_prompt", "You are a guard."},
               {"cache_scope", "castle"}, {"overflow", "drop_oldest"},
               {"model_fingerprint", "00c0ffee12345678"}, {"created_unix_ms", 1764547200000},
               {"messages", {{{"role", "system"}, {"text", "You are a guard."}}, user, reply}}};
  Json texts = {{"format", "parley-conversation"}, {"version", 1}, {"chat_template", "raw"},
                {"messages", {{{"role", "user"}, {"text", "caf\xC3\xA9 \xE2\x82\xAC"}},
                              {{"role", "assistant"}, {"text", ""}}}}};
  Json open_reply = full;
  open_reply["messages"][2]["closed"] = false;
  open_reply["messages"].push_back(user);
  return {seed("conversation/full", full.dump(1)), seed("conversation/texts-only", texts.dump()),
          seed("conversation/open-reply-then-message", open_reply.dump()),
          seed("conversation/empty", R"({"format":"parley-conversation","version":1,)"
                                     R"("chat_template":"chatml","messages":[]})"),
          // Found by fuzzing: a number no double holds is nlohmann's out_of_range, not a
          // parse_error.
          seed("conversation/number-overflow", R"({"format":"parley-conversation","version":1,)"
                                               R"("created_unix_ms":17645e472000})")};
}

}  // namespace parley::test

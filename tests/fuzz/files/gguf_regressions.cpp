// Hand-built bad GGUF files, one per bug class GGUF parsers have had (llama.cpp's own CVEs
// and OSS-Fuzz reports among them): each a copy of the tiny model with one thing broken.
#include <limits>

#include "files/fuzz_files.h"
#include "files/tiny_gguf.h"

namespace parley::test {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr size_t kNTensorsAt = 8, kNKvAt = 16, kFirstKeyAt = 24;

struct Cases {
  std::vector<FuzzFile> files;
  void add(const std::string& name, std::string bytes, const char* status, const char* field,
           const char* bug) {
    files.push_back({"gguf/" + name + ".gguf", std::move(bytes), status, "-", field, bug});
  }
  void bad(const std::string& name, const TinyGguf& g, const char* field, const char* bug) {
    add(name, g.bytes(), "BAD_MODEL", field, bug);
  }
};

// A metadata entry written with a raw writer.
template <typename F>
TinyGguf with(const std::string& key, F write) {
  TinyGguf g = tiny_gguf();
  g.set(key, write);
  return g;
}

TinyGguf with_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type = ggml_type::F32) {
  TinyGguf g = tiny_gguf();
  g.tensor(name).ne = std::move(ne);
  g.tensor(name).type = type;
  return g;
}

std::string patched_u64(size_t at, uint64_t v) {
  std::string b = tiny_gguf_file();
  put_u64_at(b, at, v);
  return b;
}

void header_cases(Cases& c) {
  const std::string base = tiny_gguf_file();
  c.add("n-kv-overflow", patched_u64(kNKvAt, uint64_t(1) << 63), "BAD_MODEL", "n_kv",
        "n_kv near 2^63: a count * entry size that wraps");
  c.add("n-tensors-overflow", patched_u64(kNTensorsAt, kU64Max), "BAD_MODEL", "n_tensors",
        "n_tensors = 2^64-1");
  {
    std::string b = base;
    const uint64_t rest = b.size() - 24;
    put_u64_at(b, kNTensorsAt, rest / 33 / 2 + 1);
    put_u64_at(b, kNKvAt, rest / 14 / 2 + 1);
    c.add("counts-fit-alone-not-together", b, "BAD_MODEL", "and n_kv",
          "n_tensors and n_kv each plausible, their sum larger than the file");
  }
  {
    TinyGguf g = tiny_gguf();
    g.version = 4;
    c.bad("version-4", g, "version 4", "unknown format version");
    g.version = __builtin_bswap32(3u);
    c.add("big-endian", g.bytes(), "UNSUPPORTED", "big-endian", "byte-swapped (big-endian) file");
  }
  c.add("truncated-header", base.substr(0, 12), "BAD_MODEL", "n_tensors",
        "file ends inside the header");
  {
    std::string b = base;
    b[0] = 'g';
    c.add("bad-magic", b, "BAD_MODEL", "not a GGUF file", "wrong magic");
  }
}

void string_and_array_cases(Cases& c) {
  c.add("key-length-overflow", patched_u64(kFirstKeyAt, kU64Max), "BAD_MODEL", "key length",
        "metadata key length 2^64-1");
  c.bad("string-length-overflow",
        with("general.name",
             [](GgufBuilder& b) { b.key_type("general.name", gguf_type::STRING).u64(kU64Max - 3); }),
        "string value length", "string value length that wraps when added to the offset");
  c.bad("empty-key", with("general.name", [](GgufBuilder& b) { b.kv_str("", "tiny"); }),
        "empty key", "zero-length metadata key");
  c.bad("array-length-overflow",
        with("tokenizer.ggml.token_type",
             [](GgufBuilder& b) {
               b.kv_array_header("tokenizer.ggml.token_type", gguf_type::INT32, uint64_t(1) << 62);
             }),
        "array length", "array count * 4 wraps to 0");
  c.bad("string-array-length-overflow",
        with("tokenizer.ggml.tokens",
             [](GgufBuilder& b) {
               b.kv_array_header("tokenizer.ggml.tokens", gguf_type::STRING, uint64_t(1) << 61);
             }),
        "array length", "array of strings with a count the file cannot hold");
  c.bad("arrays-nested-too-deep", with("x.nested", [](GgufBuilder& b) {
          b.key_type("x.nested", gguf_type::ARRAY);
          for (int i = 0; i < 40; ++i) b.u32(gguf_type::ARRAY).u64(1);
          b.u32(gguf_type::UINT8).u64(0);
        }),
        "nested deeper", "arrays of arrays nested without bound (stack exhaustion)");
  c.bad("value-type-unknown",
        with("general.name", [](GgufBuilder& b) { b.key_type("general.name", 13).u32(0); }),
        "value type 13", "value type id past the last one");
  c.bad("array-element-type-unknown", with("general.name", [](GgufBuilder& b) {
          b.kv_array_header("general.name", 99, 1).u8(0);
        }),
        "array element type 99", "array element type id past the last one");
  c.bad("bool-not-0-or-1", with("tokenizer.ggml.add_bos_token", [](GgufBuilder& b) {
          b.key_type("tokenizer.ggml.add_bos_token", gguf_type::BOOL).u8(2);
        }),
        "bool value 2", "bool byte other than 0 or 1");
  {
    TinyGguf g = tiny_gguf();
    g.meta.push_back({"general.name", [](GgufBuilder& b) { b.kv_str("general.name", "again"); }});
    c.bad("duplicate-key", g, "duplicate metadata key", "a metadata key given twice");
  }
}

void type_confusion_cases(Cases& c) {
  c.bad("tokens-not-strings", with("tokenizer.ggml.tokens", [](GgufBuilder& b) {
          b.kv_i32s("tokenizer.ggml.tokens", std::vector<int32_t>(264, 7));
        }),
        "tokenizer.ggml.tokens", "array element-type confusion: token strings as int32");
  c.bad("scores-are-strings", with("tokenizer.ggml.scores", [](GgufBuilder& b) {
          b.kv_strings("tokenizer.ggml.scores", std::vector<std::string>(264, "0.5"));
        }),
        "tokenizer.ggml.scores", "array element-type confusion: float scores as strings");
  c.bad("token-type-floats", with("tokenizer.ggml.token_type", [](GgufBuilder& b) {
          b.kv_f32s("tokenizer.ggml.token_type", std::vector<float>(264, 1.0f));
        }),
        "tokenizer.ggml.token_type", "array element-type confusion: int32 types as float");
  c.bad("block-count-is-array", with("llama.block_count", [](GgufBuilder& b) {
          b.kv_i32s("llama.block_count", {1});
        }),
        "llama.block_count", "scalar given as an array");
  c.bad("block-count-is-string", with("llama.block_count", [](GgufBuilder& b) {
          b.kv_str("llama.block_count", "1");
        }),
        "llama.block_count", "integer given as a string");
  c.bad("alignment-is-string", with("general.alignment", [](GgufBuilder& b) {
          b.kv_str("general.alignment", "32");
        }),
        "general.alignment", "alignment given as a string");
}

void tensor_cases(Cases& c) {
  c.bad("n-dims-zero", with_tensor("output_norm.weight", {}), "n_dims 0", "tensor with no dimensions");
  c.bad("n-dims-five", with_tensor("output_norm.weight", {8, 1, 1, 1, 1}), "n_dims 5",
        "n_dims past GGML_MAX_DIMS (out-of-bounds ne[] write)");
  c.bad("ne-negative", with_tensor("token_embd.weight", {8, -264}), "ne[1]",
        "negative dimension");
  c.bad("ne-zero", with_tensor("token_embd.weight", {8, 0}), "ne[1] = 0", "zero dimension");
  c.bad("element-count-overflow",
        with_tensor("token_embd.weight", {int64_t(1) << 32, int64_t(1) << 32}),
        "element count overflows", "ne product past 2^63");
  c.bad("byte-size-overflow", with_tensor("output_norm.weight", {int64_t(1) << 62}),
        "byte size overflows", "element count fits, element count * 4 bytes wraps to 0");
  c.bad("q8-row-not-blocks", with_tensor("token_embd.weight", {8, 264}, ggml_type::Q8_0),
        "Q8_0 needs ne[0]", "block-quantized row not a whole number of blocks");
  c.bad("type-unknown", with_tensor("output_norm.weight", {8}, 99), "unknown dtype 99",
        "tensor type id ggml never defined");
  c.bad("k-row-not-blocks", with_tensor("token_embd.weight", {8, 264}, ggml_type::Q4_K),
        "Q4_K needs ne[0] to be a multiple of 256", "K-quant row not a whole super-block");
  c.bad("q4-0-row-not-blocks", with_tensor("token_embd.weight", {8, 264}, ggml_type::Q4_0),
        "Q4_0 needs ne[0]", "Q4_0 (held as it is) row not a whole number of blocks");
  c.bad("q4-1-row-not-blocks", with_tensor("token_embd.weight", {8, 264}, ggml_type::Q4_1),
        "Q4_1 needs ne[0]", "Q4_1 (held as it is) row not a whole number of blocks");
  c.bad("q5-1-row-not-blocks", with_tensor("token_embd.weight", {8, 264}, ggml_type::Q5_1),
        "Q5_1 needs ne[0]", "Q5_1 (held as it is) row not a whole number of blocks");
  c.bad("q4-data-past-end", with_tensor("token_embd.weight", {4096, 264}, ggml_type::Q4_0),
        "past the end of the file", "4-bit tensor larger than the file");
  c.add("type-unsupported", with_tensor("output_norm.weight", {8}, ggml_type::Q3_K).bytes(),
        "UNSUPPORTED", "Q3_K", "known tensor type this build cannot run");
  c.bad("shape-mismatch", with_tensor("blk.0.attn_q.weight", {8, 6}),
        "blk.0.attn_q.weight", "tensor shape disagrees with the hyperparameters");
  {
    TinyGguf g = tiny_gguf();
    g.tensors.push_back({"output_norm.weight", {8}});
    c.bad("duplicate-tensor", g, "duplicate tensor name", "a tensor name given twice");
  }
  {
    TinyGguf g = tiny_gguf();
    std::string b = g.bytes();
    put_u64_at(b, g.directory_offset(), kU64Max);
    c.add("tensor-name-length-overflow", b, "BAD_MODEL", "name length",
          "tensor name length 2^64-1");
  }
}

void offset_cases(Cases& c) {
  {
    TinyGguf g = tiny_gguf();
    g.tensor("blk.0.ffn_down.weight").offset = uint64_t(1) << 40;
    c.bad("offset-past-end", g, "lies past the end", "tensor data offset past the end of the file");
    g.tensor("blk.0.ffn_down.weight").offset = kU64Max - 31;
    c.bad("offset-wraps", g, "lies past the end", "offset + size wraps past 2^64");
    g.tensor("blk.0.ffn_down.weight").offset = 4;
    c.bad("offset-misaligned", g, "not a multiple of general.alignment",
          "tensor offset not aligned");
  }
  auto alignment = [](uint32_t a) {
    return with("general.alignment", [a](GgufBuilder& b) { b.kv_u32("general.alignment", a); });
  };
  c.bad("alignment-zero", alignment(0), "general.alignment 0", "alignment 0 (division by zero)");
  c.bad("alignment-not-power-of-two", alignment(48), "general.alignment 48",
        "alignment not a power of two");
  c.bad("alignment-huge", alignment(1u << 30), "general.alignment 1073741824",
        "alignment so large the padding runs past the file");
  {
    const TinyGguf g = tiny_gguf();
    std::string b = g.bytes();
    // Cut the file inside the padding between the directory and the data section.
    size_t dir_end = g.directory_offset();
    for (const auto& t : g.tensors) dir_end += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
    if (dir_end % 32 == 0) dir_end -= 1;  // must fall short of the aligned start
    c.add("data-section-past-end", b.substr(0, dir_end + 1), "BAD_MODEL",
          "tensor data section starts at", "padding to the data section runs past the end");
    c.add("tensor-data-truncated", b.substr(0, b.size() - 40), "BAD_MODEL", "lies past the end",
          "last tensor's bytes cut off");
  }
}

void model_cases(Cases& c) {
  auto u32 = [](const char* key, uint32_t v) {
    return with(key, [key, v](GgufBuilder& b) { b.kv_u32(key, v); });
  };
  c.bad("too-many-layers", u32("llama.block_count", 0x7fffffffu), "blk.1.",
        "block_count 2^31-1 with one layer of tensors (allocation per layer)");
  c.bad("block-count-past-int32", with("llama.block_count", [](GgufBuilder& b) {
          b.kv_u64("llama.block_count", uint64_t(1) << 40);
        }),
        "llama.block_count", "block_count past int32");
  c.bad("head-count-zero", u32("llama.attention.head_count", 0), "llama.attention.head_count",
        "zero heads (division by zero)");
  c.bad("head-count-not-divisor", u32("llama.attention.head_count", 3), "not divisible",
        "embedding length not a multiple of the head count");
  c.bad("kv-heads-not-divisor", u32("llama.attention.head_count_kv", 3), "n_kv_heads",
        "more KV heads than heads");
  c.bad("vocab-size-mismatch", u32("llama.vocab_size", 300), "tokenizer.ggml.tokens",
        "vocab_size disagrees with the token list");
  c.bad("vocab-size-huge", u32("llama.vocab_size", 0x7fffffffu), "tokenizer.ggml.tokens",
        "vocab_size 2^31-1 (allocation by vocabulary size)");
  c.bad("bos-outside-vocab", u32("tokenizer.ggml.bos_token_id", 5000), "bos_id",
        "special token id past the vocabulary");
  c.bad("context-length-zero", u32("llama.context_length", 0), "context_length",
        "zero context");
  c.bad("rms-eps-nan", with("llama.attention.layer_norm_rms_epsilon", [](GgufBuilder& b) {
          b.kv_f32("llama.attention.layer_norm_rms_epsilon", std::numeric_limits<float>::quiet_NaN());
        }),
        "rms_eps", "NaN hyperparameter");
  {
    std::vector<int32_t> types(264, 1);
    types[0] = 2;
    types[1] = types[2] = 3;
    for (int i = 3; i < 259; ++i) types[size_t(i)] = 6;
    types[300 % 264] = 7;
    c.bad("token-type-out-of-range", with("tokenizer.ggml.token_type", [types](GgufBuilder& b) {
            b.kv_i32s("tokenizer.ggml.token_type", types);
          }),
          "token_type 7", "token type id sentencepiece does not know");
    types[300 % 264] = 6;
    types[0x41 + 3] = 1;  // <0x41> no longer a byte piece
    c.bad("byte-pieces-incomplete", with("tokenizer.ggml.token_type", [types](GgufBuilder& b) {
            b.kv_i32s("tokenizer.ggml.token_type", types);
          }),
          "byte pieces", "byte fallback without all 256 byte pieces");
  }
}

}  // namespace

std::vector<FuzzFile> gguf_regressions() {
  Cases c;
  header_cases(c);
  string_and_array_cases(c);
  type_confusion_cases(c);
  tensor_cases(c);
  offset_cases(c);
  model_cases(c);
  return c.files;
}

}  // namespace parley::test

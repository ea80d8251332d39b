// Hand-built bad safetensors files, one per bug class of safetensors readers: header size,
// offsets that overlap, leave gaps or run past the end, polyglot trailing data, shapes whose
// sizes overflow, zero-size shapes, duplicate keys. Each is checked as the model.safetensors
// of the tiny model's Hugging Face directory.
#include <limits>
#include <nlohmann/json.hpp>

#include "files/fuzz_files.h"
#include "files/tiny_gguf.h"
#include "support/safetensors_builder.h"

namespace parley::test {
namespace {

using json = nlohmann::ordered_json;

struct Entry {
  std::string name;
  std::string dtype = "F32";
  json shape;
  json offsets;  // [begin, end]
};

constexpr int64_t kEmbed = 264 * 8 * 4;  // bytes of the embedding, the first tensor

// The tiny model's table with the offsets the valid file has.
std::vector<Entry> base_entries() {
  const std::pair<const char*, std::vector<int64_t>> shapes[] = {
      {"model.embed_tokens.weight", {264, 8}},
      {"model.norm.weight", {8}},
      {"model.layers.0.input_layernorm.weight", {8}},
      {"model.layers.0.self_attn.q_proj.weight", {8, 8}},
      {"model.layers.0.self_attn.k_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.v_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.o_proj.weight", {8, 8}},
      {"model.layers.0.post_attention_layernorm.weight", {8}},
      {"model.layers.0.mlp.gate_proj.weight", {16, 8}},
      {"model.layers.0.mlp.up_proj.weight", {16, 8}},
      {"model.layers.0.mlp.down_proj.weight", {8, 16}},
  };
  std::vector<Entry> e;
  int64_t at = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 4;
    for (int64_t d : shape) n *= d;
    e.push_back({name, "F32", shape, {at, at + n}});
    at += n;
  }
  return e;
}

int64_t data_size(const std::vector<Entry>& e) { return e.back().offsets[1].get<int64_t>(); }

std::string header_text(const std::vector<Entry>& entries) {
  json h = json::object();
  for (const Entry& e : entries) {
    h[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", e.offsets}};
  }
  return h.dump();
}

// The header of `entries` over the valid file's data area (or `data_bytes` of zeros).
std::string file_of(const std::vector<Entry>& entries, int64_t data_bytes = -1) {
  const int64_t n = data_bytes >= 0 ? data_bytes : data_size(base_entries());
  return safetensors_raw(header_text(entries), std::string(size_t(n), '\0'));
}

struct Cases {
  std::vector<FuzzFile> files;
  void add(const std::string& name, std::string bytes, const char* field, const char* bug,
           const char* status = "BAD_MODEL") {
    files.push_back(
        {"safetensors/" + name + ".safetensors", std::move(bytes), status, "-", field, bug});
  }
};

void header_size_cases(Cases& c) {
  const auto e = base_entries();
  const std::string text = header_text(e);
  const std::string data(size_t(data_size(e)), '\0');
  c.add("header-size-overflow", safetensors_raw(text, data, std::numeric_limits<uint64_t>::max()),
        "header too long", "8-byte header length 2^64-1 (wraps when 8 is added)");
  c.add("header-size-past-end", safetensors_raw(text, data, text.size() + data.size() + 1),
        "header too long", "header length one byte past the end of the file");
  c.add("header-size-over-limit", safetensors_raw(text, data, 100000001), "header too long",
        "header length over the 100 MB limit (allocation by header size)");
  c.add("shorter-than-length", std::string("\x10\x00\x00", 3), "8-byte header length",
        "file shorter than the length field");
  c.add("header-not-json", safetensors_raw("{\"a\": [1, 2", data), "not valid JSON",
        "header cut inside the JSON");
  c.add("header-not-object", safetensors_raw("[1, 2, 3]", ""), "not a JSON object",
        "header is valid JSON but an array");
  c.add("header-invalid-utf8", safetensors_raw("{\"\xff\xfe\": {}}", ""), "not valid JSON",
        "tensor name with invalid UTF-8");
  c.add("header-deeply-nested", safetensors_raw(std::string(20000, '[') + std::string(20000, ']'), ""),
        "not a JSON object", "JSON nested 20000 deep (recursion in parse or destroy)");
}

void offset_cases(Cases& c) {
  {
    auto e = base_entries();
    e[1].offsets = {kEmbed - 16, kEmbed + 16};
    c.add("offsets-overlap", file_of(e), "overlaps", "two tensors share bytes");
  }
  {
    auto e = base_entries();
    for (size_t i = 1; i < e.size(); ++i) {
      e[i].offsets = {e[i].offsets[0].get<int64_t>() + 32, e[i].offsets[1].get<int64_t>() + 32};
    }
    c.add("offsets-gap", file_of(e, data_size(e)), "gap of 32 bytes", "unclaimed bytes between tensors");
  }
  {
    // A second file format appended after the tensors (a polyglot): bytes nobody claims.
    std::string b = file_of(base_entries());
    b += "PK\x03\x04 a zip member hiding after the tensors";
    c.add("polyglot-trailing-data", b, "trailing bytes", "data after the last tensor");
  }
  {
    auto e = base_entries();
    e.back().offsets = {e.back().offsets[0], data_size(e) + 4096};
    c.add("offsets-past-end", file_of(e), "past the data area",
          "tensor end offset past the end of the file");
  }
  {
    auto e = base_entries();
    e.back().offsets = {e.back().offsets[1], e.back().offsets[0]};
    c.add("offsets-reversed", file_of(e), "begin", "begin offset after the end offset");
  }
  {
    auto e = base_entries();
    e.back().offsets = {e.back().offsets[0], std::numeric_limits<uint64_t>::max()};
    c.add("offset-2-64", file_of(e), "past the data area", "end offset 2^64-1");
  }
  {
    auto e = base_entries();
    e.back().offsets = {e.back().offsets[0]};
    c.add("offsets-one-number", file_of(e), "data_offsets missing", "data_offsets of one number");
  }
  {
    auto e = base_entries();
    e[1].offsets = {kEmbed, "64"};
    c.add("offsets-as-string", file_of(e), "data_offsets", "offset given as a string");
  }
}

void shape_cases(Cases& c) {
  {
    auto e = base_entries();
    e[1].shape = {uint64_t(1) << 32, uint64_t(1) << 32};
    c.add("shape-product-overflow", file_of(e), "shape product overflows",
          "element count past 2^64");
  }
  {
    auto e = base_entries();
    e[1].shape = {uint64_t(1) << 62};
    c.add("byte-size-overflow", file_of(e), "overflows 64 bits",
          "element count fits, byte size wraps");
  }
  {
    auto e = base_entries();
    e[1].shape = {9};
    c.add("size-mismatch", file_of(e), "data_offsets span", "shape needs more bytes than its offsets");
  }
  {
    auto e = base_entries();
    e[1].shape = {-8};
    c.add("shape-negative", file_of(e), "not a non-negative integer", "negative dimension");
  }
  {
    auto e = base_entries();
    e[1].shape = {2.5};
    c.add("shape-float", file_of(e), "not a non-negative integer", "fractional dimension");
  }
  {
    // Valid for the format (zero-size tensors exist), wrong for this model.
    auto e = base_entries();
    e[0].shape = {0, 8};
    e[0].offsets = {0, 0};
    for (size_t i = 1; i < e.size(); ++i) {
      e[i].offsets = {e[i].offsets[0].get<int64_t>() - kEmbed, e[i].offsets[1].get<int64_t>() - kEmbed};
    }
    c.add("zero-size-shape", file_of(e, data_size(e)), "model.embed_tokens.weight' has shape [0, 8]",
          "zero-size tensor where the model needs data");
  }
  {
    auto e = base_entries();
    e[1].dtype = "F17";
    c.add("dtype-unknown", file_of(e), "unknown dtype", "dtype the format never defined");
    e[1].dtype = "I64";
    e[1].shape = {4};
    c.add("dtype-unsupported", file_of(e), "I64", "known dtype this build cannot run",
          "UNSUPPORTED");
  }
}

void entry_cases(Cases& c) {
  {
    // Two entries for one name: JSON parsers disagree on which wins, so a reader must refuse.
    const auto e = base_entries();
    std::string text = header_text(e);
    const std::string dup = ",\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[8],"
                            "\"data_offsets\":[" + std::to_string(kEmbed) + "," +
                            std::to_string(kEmbed + 32) + "]}";
    text.insert(text.size() - 1, dup);
    c.add("duplicate-key", safetensors_raw(text, std::string(size_t(data_size(e)), '\0')),
          "model.norm.weight", "a tensor name given twice (parser differential)");
  }
  {
    std::string text = header_text(base_entries());
    text.insert(1, "\"__metadata__\":{\"format\":7},");
    c.add("metadata-not-string", safetensors_raw(text, std::string(size_t(data_size(base_entries())), '\0')),
          "__metadata__", "__metadata__ value not a string");
  }
  {
    std::string text = header_text(base_entries());
    text.insert(1, "\"extra\":[1,2],");
    c.add("entry-not-object", safetensors_raw(text, std::string(size_t(data_size(base_entries())), '\0')),
          "entry is not an object", "tensor entry that is an array");
  }
}

}  // namespace

std::vector<FuzzFile> safetensors_regressions() {
  Cases c;
  header_size_cases(c);
  offset_cases(c);
  shape_cases(c);
  entry_cases(c);
  return c.files;
}

}  // namespace parley::test

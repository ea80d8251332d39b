#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>

#include "support/error_check.h"
#include "model/safetensors_reader.h"
#include "support/gguf_builder.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"

using parley::Status;
using parley::model::DType;
using parley::model::parse_safetensors;
using parley::model::parse_safetensors_index;
using parley::model::read_safetensors_dir;
using parley::test::as_span;
using parley::test::safetensors_file;
using parley::test::safetensors_raw;
using parley::test::write_bytes;

namespace {

std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * 4);
}

std::string two_tensor_file() {
  return safetensors_file(
      {{"a", "F32", {2, 2}, floats({1, 2, 3, 4})}, {"b", "F16", {3}, std::string(6, '\x11')}});
}

// A header with one tensor entry, data of `data_bytes` bytes.
std::string one_entry(const std::string& entry_json, size_t data_bytes) {
  return safetensors_raw("{\"t\": " + entry_json + "}", std::string(data_bytes, '\0'));
}

auto parse(const std::string& bytes) {
  return parse_safetensors(as_span(bytes), "test.safetensors");
}

}  // namespace

TEST_CASE("safetensors: a valid file parses with shapes, types, data and metadata") {
  const std::string bytes = two_tensor_file();
  const auto f = parse(bytes);
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.metadata.at("format") == "pt");
  const auto& a = f.tensors[0].name == "a" ? f.tensors[0] : f.tensors[1];
  const auto& b = f.tensors[0].name == "a" ? f.tensors[1] : f.tensors[0];
  CHECK(a.dtype == DType::f32);
  CHECK(a.shape == std::vector<int64_t>{2, 2});
  REQUIRE(a.data.size() == 16);
  float third;
  std::memcpy(&third, a.data.data() + 8, 4);
  CHECK(third == 3.0f);
  CHECK(b.dtype == DType::f16);
  CHECK(b.shape == std::vector<int64_t>{3});
  CHECK(b.data.size() == 6);
  CHECK(b.data.data() == a.data.data() + 16);
  // Header padded to 8 bytes, as Hugging Face writes it.
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  CHECK((8 + header_len) % 8 == 0);
}

TEST_CASE("safetensors: scalars, empty tensors and BF16 are accepted") {
  const auto f = parse(safetensors_file({{"s", "F32", {}, floats({7})},
                                         {"e", "F16", {0, 4}, ""},
                                         {"h", "BF16", {2}, std::string(4, '\0')}}));
  CHECK(f.tensors.size() == 3);
  CHECK(parse(safetensors_raw("{}", "")).tensors.empty());
}

TEST_CASE("safetensors: every truncation of a valid file is bad_model, never a crash") {
  const std::string bytes = two_tensor_file();
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(parse(bytes.substr(0, n)), Status::bad_model, "test.safetensors");
  }
}

TEST_CASE("safetensors: header length") {
  CHECK_PARLEY_ERROR(parse("abc"), Status::bad_model, "8-byte header length");
  CHECK_PARLEY_ERROR(parse(safetensors_raw("{}", "", 1000)), Status::bad_model, "header too long");
  CHECK_PARLEY_ERROR(parse(safetensors_raw("{}", "", ~uint64_t(0))), Status::bad_model,
                     "header too long");
  // Longer than 100 MB is refused even before looking at the file size.
  CHECK_PARLEY_ERROR(parse(safetensors_raw("{}", "", 100'000'001)), Status::bad_model,
                     "header too long");
}

TEST_CASE("safetensors: header must be a JSON object") {
  CHECK_PARLEY_ERROR(parse(safetensors_raw("{\"a\": ", "")), Status::bad_model, "not valid JSON");
  CHECK_PARLEY_ERROR(parse(safetensors_raw("[1, 2]", "")), Status::bad_model, "not a JSON object");
  CHECK_PARLEY_ERROR(parse(safetensors_raw("\"\xff\xfe\"", "")), Status::bad_model,
                     "not valid JSON");
  CHECK_PARLEY_ERROR(parse(safetensors_raw(R"({"__metadata__": 3})", "")), Status::bad_model,
                     "__metadata__");
  CHECK_PARLEY_ERROR(parse(safetensors_raw(R"({"__metadata__": {"k": 1}})", "")), Status::bad_model,
                     "__metadata__", "'k'");
}

TEST_CASE("safetensors: malformed tensor entries name the tensor and the field") {
  CHECK_PARLEY_ERROR(parse(one_entry("3", 0)), Status::bad_model, "'t'", "not an object");
  CHECK_PARLEY_ERROR(parse(one_entry(R"({"shape": [1], "data_offsets": [0, 4]})", 4)),
                     Status::bad_model, "'t'", "dtype");
  CHECK_PARLEY_ERROR(parse(one_entry(R"({"dtype": "F32", "data_offsets": [0, 4]})", 4)),
                     Status::bad_model, "'t'", "shape");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]})", 4)),
      Status::bad_model, "'t'", "shape entry -1");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})", 4)),
      Status::bad_model, "'t'", "shape entry");
  CHECK_PARLEY_ERROR(parse(one_entry(R"({"dtype": "F32", "shape": [1]})", 4)), Status::bad_model,
                     "'t'", "data_offsets");
  CHECK_PARLEY_ERROR(parse(one_entry(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})", 4)),
                     Status::bad_model, "'t'", "data_offsets");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]})", 4)),
      Status::bad_model, "'t'", "data_offsets");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [1], "data_offsets": [4, 0]})", 4)),
      Status::bad_model, "'t'", "begin 4 > end 0");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [1], "data_offsets": [0, 8]})", 4)),
      Status::bad_model, "'t'", "past the data area");
}

TEST_CASE("safetensors: sizes must match the shape, without overflow") {
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]})", 20)),
      Status::bad_model, "'t'", "span 20 bytes", "needs 24");
  CHECK_PARLEY_ERROR(
      parse(one_entry(
          R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]})", 0)),
      Status::bad_model, "'t'", "shape product overflows");
  CHECK_PARLEY_ERROR(
      parse(one_entry(
          R"({"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]})", 0)),
      Status::bad_model, "'t'", "shape product overflows");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0]})",
                      0)),
      Status::bad_model, "'t'", "byte size");
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "F32", "shape": [1e30], "data_offsets": [0, 0]})", 0)),
      Status::bad_model, "'t'", "shape entry");
}

TEST_CASE("safetensors: dtypes") {
  for (const char* dt : {"F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}) {
    CAPTURE(dt);
    CHECK_PARLEY_ERROR(
        parse(one_entry(
            std::string(R"({"dtype": ")") + dt + R"(", "shape": [1], "data_offsets": [0, 1]})", 1)),
        Status::unsupported, "'t'", dt);
  }
  CHECK_PARLEY_ERROR(
      parse(one_entry(R"({"dtype": "Q9", "shape": [1], "data_offsets": [0, 1]})", 1)),
      Status::bad_model, "'t'", "unknown dtype 'Q9'");
  CHECK_PARLEY_ERROR(parse(one_entry(R"({"dtype": 3, "shape": [1], "data_offsets": [0, 1]})", 1)),
                     Status::bad_model, "'t'", "dtype");
}

TEST_CASE("safetensors: tensors must tile the data area exactly") {
  const std::string gap = safetensors_raw(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
      std::string(12, '\0'));
  CHECK_PARLEY_ERROR(parse(gap), Status::bad_model, "gap of 4 bytes", "'b'");
  const std::string overlap = safetensors_raw(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
      std::string(8, '\0'));
  CHECK_PARLEY_ERROR(parse(overlap), Status::bad_model, "'b'", "overlaps", "'a'");
  const std::string same = safetensors_raw(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
      std::string(4, '\0'));
  CHECK_PARLEY_ERROR(parse(same), Status::bad_model, "overlaps");
  const std::string trailing = safetensors_raw(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", std::string(7, '\0'));
  CHECK_PARLEY_ERROR(parse(trailing), Status::bad_model, "3 trailing bytes");
  CHECK_PARLEY_ERROR(parse(safetensors_raw("{}", "x")), Status::bad_model, "1 trailing bytes");
  const std::string leading_gap = safetensors_raw(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", std::string(8, '\0'));
  CHECK_PARLEY_ERROR(parse(leading_gap), Status::bad_model, "gap", "'a'");
}

TEST_CASE("safetensors index: shard names must stay inside the directory") {
  const auto index = parse_safetensors_index(
      R"({"metadata": {}, "weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors"}})", "idx");
  CHECK(index.at("b") == "m-2.safetensors");
  for (const char* name :
       {"../m.safetensors", "sub/m.safetensors", "/etc/passwd", "..", "a..b", "c:\\\\m", ""}) {
    CAPTURE(name);
    const std::string json = std::string(R"({"weight_map": {"a": ")") + name + "\"}}";
    CHECK_PARLEY_ERROR(parse_safetensors_index(json, "idx"), Status::bad_model, "'a'",
                       "not a plain file name");
  }
  CHECK_PARLEY_ERROR(parse_safetensors_index("nope", "idx"), Status::bad_model, "not valid JSON");
  CHECK_PARLEY_ERROR(parse_safetensors_index("{}", "idx"), Status::bad_model, "weight_map");
  CHECK_PARLEY_ERROR(parse_safetensors_index(R"({"weight_map": {"a": 1}})", "idx"),
                     Status::bad_model, "'a'");
}

namespace {

// A directory with two shards: a, b in the first, c in the second, and an index.
void write_sharded(const std::filesystem::path& dir, const std::string& index_json) {
  write_bytes(dir / "m-1.safetensors",
              safetensors_file({{"a", "F32", {1}, floats({1})}, {"b", "F32", {1}, floats({2})}}));
  write_bytes(dir / "m-2.safetensors", safetensors_file({{"c", "F32", {2}, floats({3, 4})}}));
  write_bytes(dir / "model.safetensors.index.json", index_json);
}

}  // namespace

TEST_CASE("safetensors directory: single file and shards") {
  std::vector<std::shared_ptr<parley::model::MappedFile>> files;
  {
    parley::test::TempDir dir;
    write_bytes(dir / "model.safetensors", two_tensor_file());
    CHECK(read_safetensors_dir(dir.path(), files).size() == 2);
  }
  parley::test::TempDir dir;
  write_sharded(
      dir.path(),
      R"({"weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors"}})");
  const auto tensors = read_safetensors_dir(dir.path(), files);
  CHECK(tensors.size() == 3);
  CHECK(files.size() == 3);
}

TEST_CASE("safetensors directory: the index and the shards must agree") {
  std::vector<std::shared_ptr<parley::model::MappedFile>> files;
  SUBCASE("tensor missing from its shard") {
    parley::test::TempDir dir;
    write_sharded(
        dir.path(),
        R"({"weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors", "d": "m-2.safetensors"}})");
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model, "'d'",
                       "missing from its shard 'm-2.safetensors'");
  }
  SUBCASE("tensor in the wrong shard") {
    parley::test::TempDir dir;
    write_sharded(
        dir.path(),
        R"({"weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors", "c": "m-2.safetensors"}})");
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model, "'b'",
                       "m-2.safetensors", "m-1.safetensors");
  }
  SUBCASE("tensor in two shards") {
    parley::test::TempDir dir;
    write_sharded(
        dir.path(),
        R"({"weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors", "x": "m-3.safetensors"}})");
    write_bytes(dir / "m-3.safetensors",
                safetensors_file({{"a", "F32", {1}, floats({9})}, {"x", "F32", {1}, floats({9})}}));
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model, "'a'",
                       "in both");
  }
  SUBCASE("tensor not listed in the index") {
    parley::test::TempDir dir;
    write_sharded(dir.path(),
                  R"({"weight_map": {"a": "m-1.safetensors", "c": "m-2.safetensors"}})");
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model, "'b'",
                       "not listed");
  }
  SUBCASE("shard file missing") {
    parley::test::TempDir dir;
    write_sharded(
        dir.path(),
        R"({"weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors", "z": "m-9.safetensors"}})");
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model,
                       "'m-9.safetensors'", "missing");
  }
  SUBCASE("shard escaping the directory") {
    parley::test::TempDir dir;
    write_sharded(dir.path(), R"({"weight_map": {"a": "../m-1.safetensors"}})");
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model,
                       "not a plain file name");
  }
  SUBCASE("a malformed shard names its file") {
    parley::test::TempDir dir;
    write_sharded(
        dir.path(),
        R"({"weight_map": {"a": "m-1.safetensors", "b": "m-1.safetensors", "c": "m-2.safetensors"}})");
    write_bytes(dir / "m-2.safetensors", safetensors_raw("{", ""));
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model,
                       "'m-2.safetensors'", "JSON");
  }
  SUBCASE("no weights at all") {
    parley::test::TempDir dir;
    CHECK_PARLEY_ERROR(read_safetensors_dir(dir.path(), files), Status::bad_model,
                       "model.safetensors");
  }
}

TEST_CASE("safetensors: the stories260K HF file has 47 F32 tensors that tile its data") {
  PARLEY_SHARED_OR_SKIP(path, "models/stories260k/hf/model.safetensors");
  const std::string bytes = parley::test::read_file(path);
  const auto f = parse(bytes);
  CHECK(f.tensors.size() == 47);
  CHECK(f.metadata.at("format") == "pt");
  for (const auto& t : f.tensors) CHECK(t.dtype == DType::f32);
  // Every cut through the length and the header, then cuts through the data, fail cleanly.
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  for (size_t n = 0; n < bytes.size(); n += (n < 8 + header_len + 64 ? 1 : 4999)) {
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(parse_safetensors(as_span(bytes).first(n), "hf"), Status::bad_model,
                       "safetensors");
  }
}

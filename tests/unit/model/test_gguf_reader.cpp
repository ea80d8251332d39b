#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "support/error_check.h"
#include "model/gguf_reader.h"
#include "support/gguf_builder.h"
#include "support/shared_assets.h"

using parley::Status;
using parley::model::DType;
using parley::model::GgufFile;
using parley::model::GgufValueType;
using parley::model::parse_gguf;
using parley::test::as_span;
using parley::test::GgufBuilder;
namespace gt = parley::test::gguf_type;
namespace mt = parley::test::ggml_type;

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Two metadata entries and two tensors: "norm" F32 [4] and "w" F16 ne=[32, 2].
std::string small_valid_gguf() {
  GgufBuilder b;
  b.header(2, 2).kv_str("general.architecture", "llama").kv_u32("general.alignment", 32);
  b.tensor_info("norm", {4}, mt::F32, 0).tensor_info("w", {32, 2}, mt::F16, 32);
  b.pad_to(32);
  for (int i = 0; i < 4; ++i) b.f32(float(i) + 0.5f);
  b.pad_to(32);
  for (int i = 0; i < 64; ++i) b.u16(uint16_t(0x3c00));  // F16 1.0
  return b.bytes();
}

// A header, one tensor directory entry and enough zero bytes for any small tensor.
std::string one_tensor_file(const std::vector<int64_t>& ne, uint32_t type, uint64_t offset = 0) {
  GgufBuilder b;
  b.header(1, 0).tensor_info("blk.0.attn_q.weight", ne, type, offset).pad_to(32);
  b.raw(std::string(4096, '\0'));
  return b.bytes();
}

std::string one_kv_file(const std::function<void(GgufBuilder&)>& write_kv) {
  GgufBuilder b;
  b.header(0, 1);
  write_kv(b);
  return b.bytes();
}

}  // namespace

TEST_CASE("GGUF: a small valid file parses with its metadata, directory and data") {
  const std::string bytes = small_valid_gguf();
  const GgufFile f = parse_gguf(as_span(bytes));
  CHECK(f.version == 3);
  CHECK(f.alignment == 32);
  REQUIRE(f.kvs.size() == 2);
  CHECK(f.get_string("general.architecture") == "llama");
  REQUIRE(f.tensors.size() == 2);
  const auto* norm = f.find_tensor("norm");
  REQUIRE(norm);
  CHECK(norm->dtype == DType::f32);
  CHECK(norm->n_dims == 1);
  CHECK(norm->ne[0] == 4);
  REQUIRE(norm->data.size() == 16);
  float second;
  std::memcpy(&second, norm->data.data() + 4, 4);
  CHECK(second == 1.5f);
  const auto* w = f.find_tensor("w");
  REQUIRE(w);
  CHECK(w->dtype == DType::f16);
  CHECK(w->ne[0] == 32);
  CHECK(w->ne[1] == 2);
  CHECK(w->data.size() == 128);
  CHECK(w->data.data() == norm->data.data() + 32);
  CHECK(f.find_tensor("missing") == nullptr);
  CHECK(f.find("missing") == nullptr);
}

TEST_CASE("GGUF: all 13 value types and nested arrays are read") {
  GgufBuilder b;
  b.header(0, 16)
      .kv_u8("u8", 200)
      .kv_i8("i8", -100)
      .kv_u16("u16", 60000)
      .kv_i16("i16", -30000)
      .kv_u32("u32", 4000000000u)
      .kv_i32("i32", -2000000000)
      .kv_f32("f32", 0.25f)
      .kv_bool("bool", true)
      .kv_str("str", "hello")
      .kv_u64("u64", uint64_t(1) << 40)
      .kv_i64("i64", -(int64_t(1) << 40))
      .kv_f64("f64", 1e-300)
      .kv_strings("strings", {"a", "", "ccc"})
      .kv_f32s("floats", {1.0f, -2.0f});
  // [[1, 2], [3]] as arrays of uint16 inside an array.
  b.kv_array_header("nested", gt::ARRAY, 2);
  b.u32(gt::UINT16).u64(2).u16(1).u16(2);
  b.u32(gt::UINT16).u64(1).u16(3);
  b.kv_array_header("empty", gt::INT64, 0);
  const GgufFile f = parse_gguf(b.span());

  CHECK(f.get_int("u8") == 200);
  CHECK(f.get_int("i8") == -100);
  CHECK(f.get_int("u16") == 60000);
  CHECK(f.get_int("i16") == -30000);
  CHECK(f.get_int("u32") == 4000000000LL);
  CHECK(f.get_int("i32") == -2000000000LL);
  CHECK(f.get_float("f32") == 0.25);
  CHECK(f.get_bool("bool") == true);
  CHECK(f.get_string("str") == "hello");
  CHECK(f.get_int("u64") == (int64_t(1) << 40));
  CHECK(f.get_int("i64") == -(int64_t(1) << 40));
  CHECK(f.get_float("f64") == 1e-300);
  CHECK_FALSE(f.get_int("absent").has_value());

  const auto* strings = f.get_array("strings");
  REQUIRE(strings);
  CHECK(strings->elem_type == GgufValueType::string);
  REQUIRE(strings->strings.size() == 3);
  CHECK(strings->strings[1].empty());
  CHECK(strings->strings[2] == "ccc");
  const auto* floats = f.get_array("floats");
  REQUIRE(floats);
  CHECK(parley::model::gguf_array_float(*floats, 1, "floats") == -2.0);
  const auto* nested = f.get_array("nested");
  REQUIRE(nested);
  REQUIRE(nested->arrays.size() == 2);
  CHECK(nested->arrays[0].count == 2);
  CHECK(parley::model::gguf_array_int(nested->arrays[0], 1, "nested") == 2);
  CHECK(parley::model::gguf_array_int(nested->arrays[1], 0, "nested") == 3);
  CHECK(f.get_array("empty")->count == 0);
}

TEST_CASE("GGUF: a key read as the wrong type is bad_model naming the key") {
  const std::string bytes =
      one_kv_file([](GgufBuilder& b) { b.kv_str("llama.block_count", "five"); });
  const GgufFile f = parse_gguf(as_span(bytes));
  CHECK_PARLEY_ERROR(f.get_int("llama.block_count"), Status::bad_model, "llama.block_count",
                     "string");
  CHECK_PARLEY_ERROR(f.get_float("llama.block_count"), Status::bad_model, "llama.block_count");
  CHECK_PARLEY_ERROR(f.get_bool("llama.block_count"), Status::bad_model, "llama.block_count");
  CHECK_PARLEY_ERROR(f.get_array("llama.block_count"), Status::bad_model, "llama.block_count");
  const std::string big = one_kv_file([](GgufBuilder& b) { b.kv_u64("n", kU64Max); });
  const GgufFile g = parse_gguf(as_span(big));
  CHECK_PARLEY_ERROR(g.get_int("n"), Status::bad_model, "'n'", "out of range");
}

TEST_CASE("GGUF: every truncation of a small valid file is bad_model, never a crash") {
  const std::string bytes = small_valid_gguf();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string prefix = bytes.substr(0, n);
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(parse_gguf(as_span(prefix)), Status::bad_model, "GGUF: ");
  }
  // A cut names what it was reading.
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bytes.substr(0, 2))), Status::bad_model, "magic",
                     "truncated");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bytes.substr(0, 20))), Status::bad_model, "n_kv",
                     "truncated");
  GgufBuilder long_value;
  long_value.header(0, 1).kv_str("general.name", std::string(200, 'x'));
  const std::string lv = long_value.bytes().substr(0, long_value.size() - 50);
  CHECK_PARLEY_ERROR(parse_gguf(as_span(lv)), Status::bad_model, "'general.name'",
                     "string value length 200", "past the end");
  GgufBuilder long_name;
  long_name.header(1, 0).tensor_info(std::string(100, 't'), {4, 4}, mt::F32, 0);
  const std::string ln = long_name.bytes().substr(0, long_name.size() - 14);  // inside ne[1]
  CHECK_PARLEY_ERROR(parse_gguf(as_span(ln)), Status::bad_model, "'" + std::string(100, 't') + "'",
                     "ne", "truncated");
}

TEST_CASE("GGUF: bad magic and versions") {
  std::string bytes = small_valid_gguf();
  bytes[0] = 'X';
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bytes)), Status::bad_model, "magic");
  GgufBuilder v1, v4, be;
  v1.header(0, 0, 1);
  v4.header(0, 0, 4);
  be.header(0, 0, 0x03000000u);
  CHECK_PARLEY_ERROR(parse_gguf(v1.span()), Status::unsupported, "version 1");
  CHECK_PARLEY_ERROR(parse_gguf(v4.span()), Status::bad_model, "version 4");
  CHECK_PARLEY_ERROR(parse_gguf(be.span()), Status::unsupported, "big-endian");
  GgufBuilder v2;
  v2.header(0, 0, 2);
  CHECK(parse_gguf(v2.span()).version == 2);
}

TEST_CASE("GGUF: counts that the file cannot hold are rejected before any allocation") {
  GgufBuilder t, k, both;
  t.header(kU64Max, 0);
  k.header(0, uint64_t(1) << 62);
  both.header(3, 3).raw(std::string(100, '\0'));  // each count fits alone, together they do not
  CHECK_PARLEY_ERROR(parse_gguf(t.span()), Status::bad_model, "n_tensors");
  CHECK_PARLEY_ERROR(parse_gguf(k.span()), Status::bad_model, "n_kv");
  CHECK_PARLEY_ERROR(parse_gguf(both.span()), Status::bad_model, "n_tensors 3 and n_kv 3");
}

TEST_CASE("GGUF: string lengths past the end of the file") {
  GgufBuilder key;
  key.header(0, 1).u64(1000).raw(std::string(20, 'k'));
  CHECK_PARLEY_ERROR(parse_gguf(key.span()), Status::bad_model, "key length 1000", "past the end");
  GgufBuilder huge;
  huge.header(0, 1).u64(kU64Max).raw(std::string(20, 'x'));
  CHECK_PARLEY_ERROR(parse_gguf(huge.span()), Status::bad_model, "key length");
  const std::string value = one_kv_file(
      [](GgufBuilder& b) { b.key_type("general.name", gt::STRING).u64(kU64Max - 3).raw("xy"); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(value)), Status::bad_model, "general.name",
                     "string value length");
  GgufBuilder name;
  name.header(1, 0).u64(kU64Max).raw(std::string(40, 'n'));
  CHECK_PARLEY_ERROR(parse_gguf(name.span()), Status::bad_model, "tensor #0", "name length");
}

TEST_CASE("GGUF: array lengths past the end, including ones that would overflow size math") {
  const uint64_t lengths[] = {100, kU64Max, kU64Max / 4 + 1, uint64_t(1) << 61};
  const uint32_t elem_types[] = {gt::UINT8, gt::UINT32, gt::FLOAT64, gt::STRING, gt::ARRAY};
  for (uint32_t elem : elem_types) {
    for (uint64_t n : lengths) {
      CAPTURE(elem);
      CAPTURE(n);
      const std::string bytes = one_kv_file([&](GgufBuilder& b) {
        b.kv_array_header("tokenizer.ggml.tokens", elem, n).raw(std::string(16, '\0'));
      });
      CHECK_PARLEY_ERROR(parse_gguf(as_span(bytes)), Status::bad_model, "tokenizer.ggml.tokens",
                         "array length");
    }
  }
  // A nested array whose inner length is past the end.
  const std::string nested = one_kv_file(
      [](GgufBuilder& b) { b.kv_array_header("x", gt::ARRAY, 1).u32(gt::INT32).u64(kU64Max / 2); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(nested)), Status::bad_model, "'x'", "array length");
}

TEST_CASE("GGUF: malformed values") {
  const std::string bad_type = one_kv_file([](GgufBuilder& b) { b.key_type("k", 13).u32(0); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bad_type)), Status::bad_model, "'k'", "value type 13");
  const std::string bad_elem = one_kv_file([](GgufBuilder& b) { b.kv_array_header("k", 77, 0); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bad_elem)), Status::bad_model, "'k'",
                     "array element type 77");
  const std::string bad_bool =
      one_kv_file([](GgufBuilder& b) { b.key_type("flag", gt::BOOL).u8(2); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(bad_bool)), Status::bad_model, "'flag'", "bool");
  const std::string empty_key = one_kv_file([](GgufBuilder& b) { b.kv_u8("", 1).raw("pad"); });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(empty_key)), Status::bad_model, "empty key");
  // Arrays nested 40 deep: bounded, not a stack overflow.
  const std::string deep = one_kv_file([](GgufBuilder& b) {
    b.key_type("deep", gt::ARRAY);
    for (int i = 0; i < 40; ++i) b.u32(gt::ARRAY).u64(1);
    b.u32(gt::UINT8).u64(0);
  });
  CHECK_PARLEY_ERROR(parse_gguf(as_span(deep)), Status::bad_model, "'deep'", "nested");
}

TEST_CASE("GGUF: duplicate metadata keys and tensor names") {
  GgufBuilder keys;
  keys.header(0, 2).kv_u32("llama.block_count", 1).kv_u32("llama.block_count", 2);
  CHECK_PARLEY_ERROR(parse_gguf(keys.span()), Status::bad_model, "llama.block_count", "duplicate");
  GgufBuilder names;
  names.header(2, 0)
      .tensor_info("w", {4}, mt::F32, 0)
      .tensor_info("w", {4}, mt::F32, 32)
      .pad_to(32);
  names.raw(std::string(64, '\0'));
  CHECK_PARLEY_ERROR(parse_gguf(names.span()), Status::bad_model, "'w'", "duplicate tensor name");
}

TEST_CASE("GGUF: general.alignment must be a power of two in [1, 2^20]") {
  for (uint32_t a : {0u, 48u, 3u, 1u << 21, 0x80000000u}) {
    CAPTURE(a);
    GgufBuilder b;
    b.header(0, 1).kv_u32("general.alignment", a);
    CHECK_PARLEY_ERROR(parse_gguf(b.span()), Status::bad_model, "general.alignment");
  }
  GgufBuilder s;
  s.header(0, 1).kv_str("general.alignment", "32");
  CHECK_PARLEY_ERROR(parse_gguf(s.span()), Status::bad_model, "general.alignment", "string");
  GgufBuilder neg;
  neg.header(0, 1).kv_i32("general.alignment", -32);
  CHECK_PARLEY_ERROR(parse_gguf(neg.span()), Status::bad_model, "general.alignment");
  // A valid non-default alignment moves the data section.
  GgufBuilder ok;
  ok.header(1, 1).kv_u32("general.alignment", 64).tensor_info("t", {2}, mt::F32, 64).pad_to(64);
  ok.raw(std::string(128, '\0'));
  const std::string bytes = ok.bytes();
  const GgufFile f = parse_gguf(as_span(bytes));
  CHECK(f.alignment == 64);
  CHECK(f.data_offset % 64 == 0);
  CHECK(f.tensors[0].data.data() == as_span(bytes).data() + f.data_offset + 64);
}

TEST_CASE("GGUF: tensor directory checks name the tensor and the field") {
  const std::string tensor = "'blk.0.attn_q.weight'";
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({1, 1, 1, 1, 1}, mt::F32))),
                     Status::bad_model, tensor, "n_dims 5 > 4");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({}, mt::F32))), Status::bad_model, tensor,
                     "n_dims 0");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4, 0}, mt::F32))), Status::bad_model,
                     tensor, "ne[1] = 0");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4, -2}, mt::F32))), Status::bad_model,
                     tensor, "ne[1] = -2");
  const int64_t big = int64_t(1) << 32;
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({big, big}, mt::F32))), Status::bad_model,
                     tensor, "element count overflows");
  const int64_t half = int64_t(1) << 31;  // 2^62 elements fit int64, 2^64 bytes do not
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({half, half}, mt::F32))), Status::bad_model,
                     tensor, "byte size overflows");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({48, 2}, mt::Q8_0))), Status::bad_model,
                     tensor, "Q8_0", "ne[0]");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4096, 4096}, mt::F32))), Status::bad_model,
                     tensor, "past the end of the file");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4}, mt::F32, uint64_t(1) << 40))),
                     Status::bad_model, tensor, "past the end of the file");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4}, mt::F32, kU64Max - 31))),
                     Status::bad_model, tensor, "past the end of the file");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4}, mt::F32, 4))), Status::bad_model,
                     tensor, "offset 4 is not a multiple of general.alignment 32");
}

TEST_CASE("GGUF: tensor types: supported, known but unsupported, unknown") {
  for (uint32_t t : {mt::F32, mt::F16, mt::BF16, mt::Q8_0}) {
    CAPTURE(t);
    CHECK_NOTHROW(parse_gguf(as_span(one_tensor_file({64, 2}, t))));
  }
  CHECK(parse_gguf(as_span(one_tensor_file({64, 2}, mt::BF16))).tensors[0].dtype == DType::bf16);
  // ggml's other 4- to 6-bit blocks are converted: Q5_0 and Q5_K to Q5_1, Q4_K to Q4_1, Q6_K
  // to Q8_0; the directory keeps their size in the file.
  const struct {
    uint32_t type;
    int64_t ne0;
    size_t row_bytes;
    DType held;
  } blocks[] = {{6, 64, 44, DType::q5_1},
                {12, 512, 288, DType::q4_1}, {13, 512, 352, DType::q5_1},
                {14, 512, 420, DType::q8_0}};
  for (const auto& b : blocks) {
    CAPTURE(b.type);
    const GgufFile f = parse_gguf(as_span(one_tensor_file({b.ne0, 3}, b.type)));
    CHECK(f.tensors[0].dtype == b.held);
    REQUIRE(f.tensors[0].blocks != nullptr);
    CHECK(f.tensors[0].blocks->ggml_type == b.type);
    CHECK(f.tensors[0].data.size() == 3 * b.row_bytes);
  }
  CHECK(parse_gguf(as_span(one_tensor_file({64, 2}, mt::Q8_0))).tensors[0].blocks == nullptr);
  // Q4_0, Q4_1 and Q5_1 are held as they are: no conversion, rows of whole blocks of 18, 20
  // and 24 bytes.
  const GgufFile q4_0 = parse_gguf(as_span(one_tensor_file({64, 3}, 2)));
  CHECK(q4_0.tensors[0].dtype == DType::q4_0);
  CHECK(q4_0.tensors[0].blocks == nullptr);
  CHECK(q4_0.tensors[0].data.size() == 3 * 36);
  const GgufFile q4_1 = parse_gguf(as_span(one_tensor_file({64, 3}, 3)));
  CHECK(q4_1.tensors[0].dtype == DType::q4_1);
  CHECK(q4_1.tensors[0].blocks == nullptr);
  CHECK(q4_1.tensors[0].data.size() == 3 * 40);
  const GgufFile q5_1 = parse_gguf(as_span(one_tensor_file({64, 3}, 7)));
  CHECK(q5_1.tensors[0].dtype == DType::q5_1);
  CHECK(q5_1.tensors[0].blocks == nullptr);
  CHECK(q5_1.tensors[0].data.size() == 3 * 48);
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({48, 2}, 3))), Status::bad_model,
                     "Q4_1 needs ne[0] to be a multiple of 32");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({48, 2}, 7))), Status::bad_model,
                     "Q5_1 needs ne[0] to be a multiple of 32");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({128, 2}, mt::Q4_K))), Status::bad_model,
                     "'blk.0.attn_q.weight'", "Q4_K needs ne[0] to be a multiple of 256");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({48, 2}, mt::Q4_0))), Status::bad_model,
                     "Q4_0 needs ne[0] to be a multiple of 32");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({4096, 64}, mt::Q4_0))),
                     Status::bad_model, "past the end of the file");
  for (uint32_t t : {10u, 11u, 20u, 23u}) {  // Q2_K, Q3_K, IQ4_NL, IQ4_XS
    CAPTURE(t);
    CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({256, 2}, t))), Status::unsupported,
                       "'blk.0.attn_q.weight'", "is not supported", "Q4_K, Q5_K and Q6_K are");
  }
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({256, 2}, 11))), Status::unsupported,
                     "tensor type Q3_K");
  CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({64, 2}, 28))), Status::unsupported, "F64");
  for (uint32_t t : {40u, 99u, 0xffffffffu}) {
    CAPTURE(t);
    CHECK_PARLEY_ERROR(parse_gguf(as_span(one_tensor_file({64, 2}, t))), Status::bad_model,
                       "'blk.0.attn_q.weight'", "unknown dtype " + std::to_string(t));
  }
}

TEST_CASE("GGUF: random byte corruption gives a parsed file or an Error, nothing else") {
  const std::string good = small_valid_gguf();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    const int flips = 1 + int(rng() % 4);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = char(rng());
    try {
      (void)parse_gguf(as_span(bytes));
    } catch (const parley::Error& e) {
      CHECK((e.status() == Status::bad_model || e.status() == Status::unsupported));
    }
  }
}

TEST_CASE("GGUF: truncated copies of the real stories260K file are rejected") {
  PARLEY_SHARED_OR_SKIP(path, "models/stories260k/stories260k-f32.gguf");
  const std::string bytes = parley::test::read_file(path);
  const GgufFile full = parse_gguf(as_span(bytes));
  CHECK(full.tensors.size() == 47);
  CHECK(full.kvs.size() > 20);
  // Cuts every few bytes through the metadata and directory (every single prefix is covered
  // on the small files above), then evenly spaced cuts through the data.
  const size_t directory_end = full.data_offset;
  for (size_t n = 0; n < directory_end; n += (n < 1024 ? 1 : 7)) {
    const auto prefix = as_span(bytes).first(n);
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(parse_gguf(prefix), Status::bad_model, "GGUF: ");
  }
  for (size_t n = directory_end; n < bytes.size(); n += 997) {
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(parse_gguf(as_span(bytes).first(n)), Status::bad_model, "past the end");
  }
}

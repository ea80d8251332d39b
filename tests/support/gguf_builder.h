// Low-level GGUF byte writer for tests: each piece of the format written as asked, nothing
// checked, so tests can hand-build broken files as easily as valid ones. Written from the
// GGUF specification, independently of src/model's reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parley::test {

// GGUF metadata value type ids.
namespace gguf_type {
inline constexpr uint32_t UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5,
                          FLOAT32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11,
                          FLOAT64 = 12;
}

// ggml tensor type ids.
namespace ggml_type {
inline constexpr uint32_t F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_1 = 7, Q8_0 = 8, Q3_K = 11,
                          Q4_K = 12, BF16 = 30;
}

class GgufBuilder {
 public:
  // Raw little-endian values.
  GgufBuilder& u8(uint8_t v) { return raw(&v, 1); }
  GgufBuilder& u16(uint16_t v) { return raw(&v, 2); }
  GgufBuilder& u32(uint32_t v) { return raw(&v, 4); }
  GgufBuilder& u64(uint64_t v) { return raw(&v, 8); }
  GgufBuilder& i64(int64_t v) { return raw(&v, 8); }
  GgufBuilder& f32(float v) { return raw(&v, 4); }
  GgufBuilder& f64(double v) { return raw(&v, 8); }
  GgufBuilder& raw(const void* p, size_t n);
  GgufBuilder& raw(std::string_view bytes) { return raw(bytes.data(), bytes.size()); }
  GgufBuilder& str(std::string_view s) { return u64(s.size()).raw(s); }  // GGUF string

  // "GGUF", version, n_tensors, n_kv.
  GgufBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3);

  // One metadata entry: key, type id, value.
  GgufBuilder& kv_u8(std::string_view key, uint8_t v) {
    return key_type(key, gguf_type::UINT8).u8(v);
  }
  GgufBuilder& kv_i8(std::string_view key, int8_t v) {
    return key_type(key, gguf_type::INT8).u8(uint8_t(v));
  }
  GgufBuilder& kv_u16(std::string_view key, uint16_t v) {
    return key_type(key, gguf_type::UINT16).u16(v);
  }
  GgufBuilder& kv_i16(std::string_view key, int16_t v) {
    return key_type(key, gguf_type::INT16).u16(uint16_t(v));
  }
  GgufBuilder& kv_u32(std::string_view key, uint32_t v) {
    return key_type(key, gguf_type::UINT32).u32(v);
  }
  GgufBuilder& kv_i32(std::string_view key, int32_t v) {
    return key_type(key, gguf_type::INT32).u32(uint32_t(v));
  }
  GgufBuilder& kv_f32(std::string_view key, float v) {
    return key_type(key, gguf_type::FLOAT32).f32(v);
  }
  GgufBuilder& kv_bool(std::string_view key, bool v) {
    return key_type(key, gguf_type::BOOL).u8(v ? 1 : 0);
  }
  GgufBuilder& kv_str(std::string_view key, std::string_view v) {
    return key_type(key, gguf_type::STRING).str(v);
  }
  GgufBuilder& kv_u64(std::string_view key, uint64_t v) {
    return key_type(key, gguf_type::UINT64).u64(v);
  }
  GgufBuilder& kv_i64(std::string_view key, int64_t v) {
    return key_type(key, gguf_type::INT64).i64(v);
  }
  GgufBuilder& kv_f64(std::string_view key, double v) {
    return key_type(key, gguf_type::FLOAT64).f64(v);
  }
  GgufBuilder& kv_strings(std::string_view key, const std::vector<std::string>& v);
  GgufBuilder& kv_f32s(std::string_view key, const std::vector<float>& v);
  GgufBuilder& kv_i32s(std::string_view key, const std::vector<int32_t>& v);
  // Key, ARRAY, element type, count; the caller writes the elements.
  GgufBuilder& kv_array_header(std::string_view key, uint32_t elem_type, uint64_t count) {
    return key_type(key, gguf_type::ARRAY).u32(elem_type).u64(count);
  }
  GgufBuilder& key_type(std::string_view key, uint32_t type) { return str(key).u32(type); }

  // One tensor directory entry: name, n_dims, ne[n_dims] (innermost first), type, offset.
  GgufBuilder& tensor_info(std::string_view name, const std::vector<int64_t>& ne, uint32_t type,
                           uint64_t offset);

  // Zero bytes up to the next multiple of `alignment`.
  GgufBuilder& pad_to(size_t alignment);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }
  std::span<const std::byte> span() const {
    return std::as_bytes(std::span(bytes_.data(), bytes_.size()));
  }

 private:
  std::string bytes_;
};

// Views a byte string as the span the parsers take.
inline std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace parley::test

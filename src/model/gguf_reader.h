// Bounds-checked GGUF (v2/v3, little-endian) parser: metadata and tensor directory.
// Everything is validated before use; a malformed file gives Error(bad_model) naming the
// field, a valid file with a tensor type we cannot run gives Error(unsupported).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/dtype.h"
#include "model/ggml_quants.h"

namespace parley::model {

enum class GgufValueType : uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType t);

// ggml tensor type ids we hold as they are (the block types of ggml_quants.h are converted;
// the others are recognised only to name them).
inline constexpr uint32_t kGgmlF32 = 0;
inline constexpr uint32_t kGgmlF16 = 1;
inline constexpr uint32_t kGgmlQ4_0 = 2;
inline constexpr uint32_t kGgmlQ4_1 = 3;
inline constexpr uint32_t kGgmlQ5_1 = 7;
inline constexpr uint32_t kGgmlQ8_0 = 8;
inline constexpr uint32_t kGgmlBF16 = 30;

// "Q4_K" etc. for every ggml type id below 40; "" for ids ggml never defined.
std::string_view ggml_type_name(uint32_t type);

// One metadata value. Views point into the parsed bytes, which must outlive it.
struct GgufValue {
  GgufValueType type = GgufValueType::uint8;
  // Scalar: its little-endian bytes. String: its characters. Array of fixed-size elements:
  // the packed elements (count * element size bytes).
  std::span<const std::byte> bytes;
  // Arrays only.
  GgufValueType elem_type = GgufValueType::uint8;
  uint64_t count = 0;
  std::vector<std::string_view> strings;  // elem_type == string: [count]
  std::vector<GgufValue> arrays;          // elem_type == array: [count]

  std::string_view as_string() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
};

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] is the innermost (contiguous) dimension
  uint32_t ggml_type = 0;
  DType dtype = DType::f32;         // the type the tensor is held in once loaded
  const GgmlBlockType* blocks = nullptr;  // the file's blocks when converted (ggml_quants.h)
  uint64_t offset = 0;              // from the start of the data section
  std::span<const std::byte> data;  // n_bytes bytes inside the file
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
};

namespace detail {
class GgufParser;
}

class GgufFile {
 public:
  uint32_t version = 0;
  uint32_t alignment = 32;              // general.alignment, default 32
  size_t data_offset = 0;               // start of the tensor data section in the file
  std::vector<GgufKv> kvs;              // in file order
  std::vector<GgufTensorInfo> tensors;  // in file order

  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: nullopt when the key is absent, Error(bad_model) naming the key when it
  // holds another type. Integers may be stored as any integer type; floats as float32/64.
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  // An array value (any element type; callers check it), or nullptr when absent.
  const GgufValue* get_array(std::string_view key) const;

 private:
  friend class detail::GgufParser;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// Parses a whole GGUF file held in `bytes` (which must outlive the result).
GgufFile parse_gguf(std::span<const std::byte> bytes);

// Element access for arrays of numbers (any integer type / float32 / float64), with the key
// named in errors. Integer elements that do not fit int64 are bad_model.
int64_t gguf_array_int(const GgufValue& array, uint64_t i, std::string_view key);
double gguf_array_float(const GgufValue& array, uint64_t i, std::string_view key);

bool gguf_is_integer_type(GgufValueType t);

}  // namespace parley::model

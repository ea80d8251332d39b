#include "model/gguf_reader.h"

#include <bit>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "model/ggml_quants.h"

namespace parley::model {

static_assert(std::endian::native == std::endian::little, "GGUF values are read as little-endian");

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 16;  // nested arrays are legal but rare; bounds recursion
constexpr uint64_t kMaxAlignment = uint64_t(1) << 20;
// Smallest possible encodings, used to reject counts the remaining bytes cannot hold.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;  // key length, 1-char key, type, uint8
constexpr uint64_t kMinTensorInfoBytes =
    8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, offset
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;

// Size of a fixed-size value type; 0 for string and array.
size_t fixed_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16:
      return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32:
      return 4;
    case GgufValueType::uint64:
    case GgufValueType::int64:
    case GgufValueType::float64:
      return 8;
    case GgufValueType::string:
    case GgufValueType::array:
      return 0;
  }
  return 0;
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // file offsets carry no alignment guarantee
  return v;
}

// Reads one element of an integer type; nullopt when it does not fit int64.
std::optional<int64_t> load_int(GgufValueType t, const std::byte* p) {
  switch (t) {
    case GgufValueType::uint8:
      return load<uint8_t>(p);
    case GgufValueType::int8:
      return load<int8_t>(p);
    case GgufValueType::uint16:
      return load<uint16_t>(p);
    case GgufValueType::int16:
      return load<int16_t>(p);
    case GgufValueType::uint32:
      return load<uint32_t>(p);
    case GgufValueType::int32:
      return load<int32_t>(p);
    case GgufValueType::int64:
      return load<int64_t>(p);
    case GgufValueType::uint64: {
      const uint64_t v = load<uint64_t>(p);
      if (v > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return int64_t(v);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

namespace detail {

class GgufParser {
 public:
  explicit GgufParser(std::span<const std::byte> bytes) : bytes_(bytes) {}

  GgufFile run();

 private:
  size_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void bad(const std::string& what) const {
    fail(Status::bad_model, "GGUF: " + context_ + what);
  }

  std::span<const std::byte> take(uint64_t n, const char* what) {
    if (n > remaining()) {
      bad(std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
          std::to_string(pos_) + " but the file has only " + std::to_string(remaining()) +
          " left (truncated)");
    }
    auto s = bytes_.subspan(pos_, size_t(n));
    pos_ += size_t(n);
    return s;
  }

  template <typename T>
  T read(const char* what) {
    return load<T>(take(sizeof(T), what).data());
  }

  std::string_view read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining()) {
      bad(std::string(what) + " length " + std::to_string(len) +
          " runs past the end of the file (" + std::to_string(remaining()) + " bytes left)");
    }
    auto s = take(len, what);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

  GgufValueType read_type(const char* what) {
    const uint32_t t = read<uint32_t>(what);
    if (t > uint32_t(GgufValueType::float64))
      bad(std::string(what) + " " + std::to_string(t) + " is not a GGUF value type");
    return GgufValueType(t);
  }

  GgufValue read_value(GgufValueType type, int depth);
  void read_array(GgufValue& v, int depth);
  void read_header(uint64_t& n_tensors, uint64_t& n_kv);
  void read_kvs(GgufFile& f, uint64_t n_kv);
  void read_alignment(GgufFile& f);
  void read_tensor_infos(GgufFile& f, uint64_t n_tensors);
  void place_tensor_data(GgufFile& f);

  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
  std::string context_;          // "metadata key 'x': " / "tensor 'y': ", prefixed to every message
  std::vector<uint64_t> sizes_;  // byte size of each tensor, checked against the file last
};

namespace {

// ggml type id -> the dtype its tensor is held in, or an error that names the tensor and the
// type. The other 4- to 6-bit block types are converted to Q8_0, Q4_1 or Q5_1
// (ggml_quants.h).
DType tensor_dtype(uint32_t type, const std::string& context) {
  switch (type) {
    case kGgmlF32:
      return DType::f32;
    case kGgmlF16:
      return DType::f16;
    case kGgmlQ8_0:
      return DType::q8_0;
    case kGgmlQ4_0:
      return DType::q4_0;
    case kGgmlQ4_1:
      return DType::q4_1;
    case kGgmlQ5_1:
      return DType::q5_1;
    case kGgmlBF16:
      return DType::bf16;
    default:
      break;
  }
  if (const GgmlBlockType* blocks = convertible_block_type(type)) return blocks->held;
  const std::string_view name = ggml_type_name(type);
  if (name.empty())
    fail(Status::bad_model, "GGUF: " + context + "unknown dtype " + std::to_string(type));
  fail(Status::unsupported, "GGUF: " + context + "tensor type " + std::string(name) +
                                " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_1, " +
                                std::string(convertible_block_type_names()) + " are)");
}

}  // namespace

GgufValue GgufParser::read_value(GgufValueType type, int depth) {
  GgufValue v;
  v.type = type;
  if (const size_t n = fixed_size(type)) {
    v.bytes = take(n, "value");
    if (type == GgufValueType::boolean && uint8_t(v.bytes[0]) > 1) {
      bad("bool value " + std::to_string(unsigned(v.bytes[0])) + " is not 0 or 1");
    }
  } else if (type == GgufValueType::string) {
    const std::string_view s = read_string("string value");
    v.bytes = std::as_bytes(std::span(s.data(), s.size()));
  } else {
    read_array(v, depth);
  }
  return v;
}

void GgufParser::read_array(GgufValue& v, int depth) {
  if (depth >= kMaxArrayDepth) bad("arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  v.elem_type = read_type("array element type");
  v.count = read<uint64_t>("array length");
  const size_t elem = fixed_size(v.elem_type);
  const uint64_t min_elem = elem                                   ? elem
                            : v.elem_type == GgufValueType::string ? kMinStringBytes
                                                                   : kMinArrayBytes;
  // Division, not multiplication: a huge count must not wrap the size computation.
  if (v.count > remaining() / min_elem) {
    bad("array length " + std::to_string(v.count) + " of " +
        std::string(gguf_value_type_name(v.elem_type)) + " runs past the end of the file (" +
        std::to_string(remaining()) + " bytes left)");
  }
  if (elem) {
    v.bytes = take(v.count * elem, "array elements");
    if (v.elem_type == GgufValueType::boolean) {
      for (uint64_t i = 0; i < v.count; ++i) {
        if (uint8_t(v.bytes[i]) > 1)
          bad("bool array element " + std::to_string(i) + " is not 0 or 1");
      }
    }
  } else if (v.elem_type == GgufValueType::string) {
    v.strings.reserve(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(read_string("array string"));
  } else {
    v.arrays.reserve(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) {
      GgufValue child;
      child.type = GgufValueType::array;
      read_array(child, depth + 1);
      v.arrays.push_back(std::move(child));
    }
  }
}

void GgufParser::read_header(uint64_t& n_tensors, uint64_t& n_kv) {
  const auto magic = take(4, "magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) bad("magic is not 'GGUF'");
  const uint32_t version = read<uint32_t>("version");
  if (version == 1)
    fail(Status::unsupported, "GGUF: version 1 files are not supported (convert to v3)");
  if (version == __builtin_bswap32(2u) || version == __builtin_bswap32(3u)) {
    fail(Status::unsupported, "GGUF: big-endian files are not supported");
  }
  if (version != 2 && version != 3) bad("version " + std::to_string(version) + " is not 2 or 3");
  n_tensors = read<uint64_t>("n_tensors");
  n_kv = read<uint64_t>("n_kv");
  const uint64_t rest = remaining();
  if (n_tensors > rest / kMinTensorInfoBytes) {
    bad("n_tensors " + std::to_string(n_tensors) + " cannot fit in the " + std::to_string(rest) +
        " bytes after the header");
  }
  if (n_kv > rest / kMinKvBytes) {
    bad("n_kv " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(rest) +
        " bytes after the header");
  }
  if (n_tensors * kMinTensorInfoBytes + n_kv * kMinKvBytes > rest) {  // each term <= rest
    bad("n_tensors " + std::to_string(n_tensors) + " and n_kv " + std::to_string(n_kv) +
        " cannot fit in the " + std::to_string(rest) + " bytes after the header");
  }
}

void GgufParser::read_kvs(GgufFile& f, uint64_t n_kv) {
  f.kvs.reserve(size_t(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    context_ = "metadata entry #" + std::to_string(i) + ": ";
    const std::string_view key = read_string("key");
    if (key.empty()) bad("empty key");
    context_ = "metadata key '" + std::string(key) + "': ";
    const GgufValueType type = read_type("value type");
    GgufKv kv{key, read_value(type, 0)};
    if (!f.kv_index_.emplace(key, f.kvs.size()).second) bad("duplicate metadata key");
    f.kvs.push_back(std::move(kv));
  }
  context_.clear();
}

void GgufParser::read_alignment(GgufFile& f) {
  const auto a = f.get_int("general.alignment");  // type mismatch -> bad_model naming the key
  if (!a) return;
  if (*a <= 0 || uint64_t(*a) > kMaxAlignment || !std::has_single_bit(uint64_t(*a))) {
    bad("general.alignment " + std::to_string(*a) + " is not a power of two in [1, " +
        std::to_string(kMaxAlignment) + "]");
  }
  f.alignment = uint32_t(*a);
}

void GgufParser::read_tensor_infos(GgufFile& f, uint64_t n_tensors) {
  f.tensors.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    context_ = "tensor #" + std::to_string(i) + ": ";
    GgufTensorInfo t;
    t.name = std::string(read_string("name"));
    if (t.name.empty()) bad("empty name");
    context_ = "tensor '" + t.name + "': ";
    t.n_dims = read<uint32_t>("n_dims");
    if (t.n_dims == 0) bad("n_dims 0");
    if (t.n_dims > kMaxDims)
      bad("n_dims " + std::to_string(t.n_dims) + " > " + std::to_string(kMaxDims));
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      t.ne[d] = read<int64_t>("ne");
      if (t.ne[d] <= 0)
        bad("ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]) + " is not positive");
      if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements))
        bad("element count overflows 64 bits");
    }
    t.ggml_type = read<uint32_t>("type");
    t.dtype = tensor_dtype(t.ggml_type, context_);
    t.blocks = convertible_block_type(t.ggml_type);
    const uint64_t block_values = t.blocks ? t.blocks->block_values : uint64_t(kQ8BlockValues);
    if (is_blocked(t.dtype) && uint64_t(t.ne[0]) % block_values != 0) {
      bad(std::string(t.blocks ? t.blocks->name : dtype_name(t.dtype)) +
          " needs ne[0] to be a multiple of " + std::to_string(block_values) + ", got " +
          std::to_string(t.ne[0]));
    }
    const uint64_t rows = uint64_t(n_elements / t.ne[0]);
    // The row's bytes are checked too: ne[0] * 4 wraps (to 0 for ne[0] = 2^62) while the
    // element count still fits.
    uint64_t row = 0, n_bytes = 0;
    bool row_wraps = false;
    if (t.blocks) {
      row = block_row_bytes(*t.blocks, uint64_t(t.ne[0]));  // at most 0.82 bytes per value
    } else if (is_blocked(t.dtype)) {
      row = row_bytes(t.dtype, size_t(t.ne[0]));  // n / 32 * 34 < 2n: cannot wrap
    } else {
      row_wraps = __builtin_mul_overflow(uint64_t(t.ne[0]), uint64_t(row_bytes(t.dtype, 1)), &row);
    }
    if (row_wraps || __builtin_mul_overflow(row, rows, &n_bytes)) {
      bad("byte size overflows 64 bits");
    }
    t.offset = read<uint64_t>("offset");
    if (!f.tensor_index_.emplace(t.name, f.tensors.size()).second) bad("duplicate tensor name");
    sizes_.push_back(n_bytes);
    f.tensors.push_back(std::move(t));
  }
  context_.clear();
}

void GgufParser::place_tensor_data(GgufFile& f) {
  // The data section starts at the next multiple of the alignment after the directory.
  const uint64_t a = f.alignment;
  const uint64_t start = (uint64_t(pos_) + a - 1) / a * a;  // pos_ <= size: no overflow
  f.data_offset = size_t(start);
  if (f.tensors.empty()) return;
  if (start > bytes_.size()) {
    bad("tensor data section starts at " + std::to_string(start) + ", past the end of the file (" +
        std::to_string(bytes_.size()) + " bytes)");
  }
  const uint64_t data_size = bytes_.size() - start;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    GgufTensorInfo& t = f.tensors[i];
    context_ = "tensor '" + t.name + "': ";
    if (t.offset % a != 0) {
      bad("offset " + std::to_string(t.offset) + " is not a multiple of general.alignment " +
          std::to_string(a));
    }
    if (t.offset > data_size || sizes_[i] > data_size - t.offset) {
      bad("data [" + std::to_string(t.offset) + ", +" + std::to_string(sizes_[i]) +
          ") lies past the end of the file (data section holds " + std::to_string(data_size) +
          " bytes)");
    }
    t.data = bytes_.subspan(size_t(start + t.offset), size_t(sizes_[i]));
  }
  context_.clear();
}

GgufFile GgufParser::run() {
  GgufFile f;
  uint64_t n_tensors = 0, n_kv = 0;
  read_header(n_tensors, n_kv);
  f.version = load<uint32_t>(bytes_.data() + 4);
  read_kvs(f, n_kv);
  read_alignment(f);
  read_tensor_infos(f, n_tensors);
  place_tensor_data(f);
  return f;
}

}  // namespace detail

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
      return "uint8";
    case GgufValueType::int8:
      return "int8";
    case GgufValueType::uint16:
      return "uint16";
    case GgufValueType::int16:
      return "int16";
    case GgufValueType::uint32:
      return "uint32";
    case GgufValueType::int32:
      return "int32";
    case GgufValueType::float32:
      return "float32";
    case GgufValueType::boolean:
      return "bool";
    case GgufValueType::string:
      return "string";
    case GgufValueType::array:
      return "array";
    case GgufValueType::uint64:
      return "uint64";
    case GgufValueType::int64:
      return "int64";
    case GgufValueType::float64:
      return "float64";
  }
  return "?";
}

std::string_view ggml_type_name(uint32_t type) {
  // Index = ggml_type id; ids 4, 5, 31-33 and 36-38 belonged to formats ggml has since removed.
  static constexpr std::string_view kNames[] = {
      "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
      "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
      "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
      "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
      "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
      "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  static_assert(std::size(kNames) == 40);
  return type < std::size(kNames) ? kNames[type] : std::string_view();
}

bool gguf_is_integer_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::uint16:
    case GgufValueType::int16:
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::uint64:
    case GgufValueType::int64:
      return true;
    default:
      return false;
  }
}

GgufFile parse_gguf(std::span<const std::byte> bytes) { return detail::GgufParser(bytes).run(); }

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

namespace {

[[noreturn]] void wrong_type(std::string_view key, GgufValueType got, const char* expected) {
  fail(Status::bad_model, "GGUF: metadata key '" + std::string(key) + "' has type " +
                              std::string(gguf_value_type_name(got)) + ", expected " + expected);
}

}  // namespace

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!gguf_is_integer_type(v->type)) wrong_type(key, v->type, "an integer");
  const auto i = load_int(v->type, v->bytes.data());
  if (!i) fail(Status::bad_model, "GGUF: metadata key '" + std::string(key) + "' is out of range");
  return i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == GgufValueType::float32) return load<float>(v->bytes.data());
  if (v->type == GgufValueType::float64) return load<double>(v->bytes.data());
  wrong_type(key, v->type, "float32 or float64");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::boolean) wrong_type(key, v->type, "bool");
  return uint8_t(v->bytes[0]) != 0;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::string) wrong_type(key, v->type, "string");
  return v->as_string();
}

const GgufValue* GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v && v->type != GgufValueType::array) wrong_type(key, v->type, "array");
  return v;
}

int64_t gguf_array_int(const GgufValue& array, uint64_t i, std::string_view key) {
  require(i < array.count, Status::internal, "GGUF array index out of range");
  if (!gguf_is_integer_type(array.elem_type)) {
    fail(Status::bad_model, "GGUF: metadata key '" + std::string(key) + "' is an array of " +
                                std::string(gguf_value_type_name(array.elem_type)) +
                                ", expected integers");
  }
  const auto v = load_int(array.elem_type, array.bytes.data() + i * fixed_size(array.elem_type));
  if (!v) {
    fail(Status::bad_model, "GGUF: metadata key '" + std::string(key) + "' element " +
                                std::to_string(i) + " is out of range");
  }
  return *v;
}

double gguf_array_float(const GgufValue& array, uint64_t i, std::string_view key) {
  require(i < array.count, Status::internal, "GGUF array index out of range");
  if (array.elem_type == GgufValueType::float32) return load<float>(array.bytes.data() + i * 4);
  if (array.elem_type == GgufValueType::float64) return load<double>(array.bytes.data() + i * 8);
  fail(Status::bad_model, "GGUF: metadata key '" + std::string(key) + "' is an array of " +
                              std::string(gguf_value_type_name(array.elem_type)) +
                              ", expected float32 or float64");
}

}  // namespace parley::model

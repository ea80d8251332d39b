#include "support/gguf_builder.h"

namespace parley::test {

GgufBuilder& GgufBuilder::raw(const void* p, size_t n) {
  bytes_.append(static_cast<const char*>(p), n);
  return *this;
}

GgufBuilder& GgufBuilder::header(uint64_t n_tensors, uint64_t n_kv, uint32_t version) {
  return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
}

GgufBuilder& GgufBuilder::kv_strings(std::string_view key, const std::vector<std::string>& v) {
  kv_array_header(key, gguf_type::STRING, v.size());
  for (const std::string& s : v) str(s);
  return *this;
}

GgufBuilder& GgufBuilder::kv_f32s(std::string_view key, const std::vector<float>& v) {
  kv_array_header(key, gguf_type::FLOAT32, v.size());
  for (float x : v) f32(x);
  return *this;
}

GgufBuilder& GgufBuilder::kv_i32s(std::string_view key, const std::vector<int32_t>& v) {
  kv_array_header(key, gguf_type::INT32, v.size());
  for (int32_t x : v) u32(uint32_t(x));
  return *this;
}

GgufBuilder& GgufBuilder::tensor_info(std::string_view name, const std::vector<int64_t>& ne,
                                      uint32_t type, uint64_t offset) {
  str(name).u32(uint32_t(ne.size()));
  for (int64_t n : ne) i64(n);
  return u32(type).u64(offset);
}

GgufBuilder& GgufBuilder::pad_to(size_t alignment) {
  while (bytes_.size() % alignment != 0) bytes_.push_back('\0');
  return *this;
}

}  // namespace parley::test

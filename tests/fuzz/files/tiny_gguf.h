// The tiny model as an editable GGUF description: metadata entries and tensor directory in
// file order, turned into bytes on demand, so a regression changes one thing and keeps the
// rest valid.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/gguf_builder.h"

namespace parley::test {

struct TinyGguf {
  struct Meta {
    std::string key;
    std::function<void(GgufBuilder&)> write;  // the whole entry: key, type, value
  };
  struct Tensor {
    Tensor(std::string n, std::vector<int64_t> shape, uint32_t t = ggml_type::F32)
        : name(std::move(n)), ne(std::move(shape)), type(t) {}
    std::string name;
    std::vector<int64_t> ne;  // innermost first
    uint32_t type = ggml_type::F32;
    std::optional<uint64_t> offset;  // default: packed after the previous one, aligned
  };

  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // header counts; default: the real ones
  std::vector<Meta> meta;
  std::vector<Tensor> tensors;

  // Replaces the entry for `key` (or appends one) with a writer of the whole entry.
  void set(const std::string& key, std::function<void(GgufBuilder&)> write);
  Tensor& tensor(const std::string& name);
  std::string bytes() const;
  // Offset of the first tensor directory entry in bytes().
  size_t directory_offset() const;
};

TinyGguf tiny_gguf();

// Little-endian patches of a built file.
void put_u32_at(std::string& bytes, size_t at, uint32_t v);
void put_u64_at(std::string& bytes, size_t at, uint64_t v);

}  // namespace parley::test

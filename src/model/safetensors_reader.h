// Bounds-checked safetensors reader (one file, or the shards of a
// model.safetensors.index.json). A malformed file gives Error(bad_model) naming the file and
// the field; a well-formed tensor of a type we cannot run gives Error(unsupported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"
#include "model/mapped_file.h"

namespace parley::model {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u * 1000u * 1000u;

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;       // outermost first, as PyTorch: [rows, cols] for a matrix
  std::span<const std::byte> data;  // inside the parsed bytes
};

struct SafetensorsFile {
  std::vector<SafetensorsTensor> tensors;       // in header order
  std::map<std::string, std::string> metadata;  // "__metadata__", when present
};

// Parses one safetensors file held in `bytes` (which must outlive the result). `label`
// names the file in error messages.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view label);

// model.safetensors.index.json: tensor name -> shard file name (a plain name in the same
// directory; names with '/', '\\' or ".." are rejected).
std::map<std::string, std::string> parse_safetensors_index(std::string_view json,
                                                           std::string_view label);

// Every tensor of a Hugging Face directory: model.safetensors, or the shards listed by
// model.safetensors.index.json (each tensor in exactly the shard the index names). The
// mappings are appended to `files`, which must outlive the returned views.
std::vector<SafetensorsTensor> read_safetensors_dir(
    const std::filesystem::path& dir, std::vector<std::shared_ptr<MappedFile>>& files);

}  // namespace parley::model

// Safetensors byte writers for tests: a well-formed file from tensors, or raw pieces for
// hand-built broken files. Written from the format's specification, independently of
// src/model's reader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace parley::test {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;  // outermost first
  std::string bytes;           // the tensor's data
};

// Header {name: {dtype, shape, data_offsets}, "__metadata__": {"format": "pt"}} padded with
// spaces to a multiple of 8 bytes (as Hugging Face writes it), then the tensors back to back.
std::string safetensors_file(const std::vector<SafetensorsEntry>& tensors);

// 8-byte length (the header's, unless `declared_length` is given), header text, data.
std::string safetensors_raw(const std::string& header, const std::string& data,
                            std::optional<uint64_t> declared_length = std::nullopt);

void write_bytes(const std::filesystem::path& path, const std::string& bytes);

}  // namespace parley::test

// Reading small side files of a model directory (config.json, tokenizer files) whole.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace parley::model {

// The whole file. Throws Error(not_found) when it does not exist, Error(io) when it cannot be
// read, Error(bad_model) when it is larger than `max_bytes` (such files are never that big),
// empty, or a Git LFS pointer.
std::string read_text_file(const std::filesystem::path& path, size_t max_bytes);

// A file a directory may leave out (generation_config.json, added_tokens.json, ...): "" when it
// is absent or empty (as transformers takes an empty one), else as read_text_file.
std::string read_optional_text_file(const std::filesystem::path& path, size_t max_bytes);

}  // namespace parley::model

// Files a download or clone leaves in place of a model file: empty ones, and the small text
// pointers that a clone made without Git LFS holds instead of the large files.
#pragma once

#include <string>
#include <string_view>

namespace parley::model {

// Throws Error(bad_model) naming `path` when `contents` (the file's bytes, or at least its
// first hundred) are empty or a Git LFS pointer, saying how to get the real file.
void refuse_placeholder_file(const std::string& path, std::string_view contents);

}  // namespace parley::model

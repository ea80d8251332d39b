#include "model/text_file.h"

#include <fstream>
#include <system_error>

#include "common/error.h"
#include "model/placeholder_file.h"

namespace parley::model {

std::string read_text_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!exists) fail(Status::not_found, "'" + path.string() + "' does not exist");
  if (!std::filesystem::is_regular_file(path, ec))
    fail(Status::io, "'" + path.string() + "' is not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(Status::io, "cannot read '" + path.string() + "': " + ec.message());
  if (size > max_bytes) {
    fail(Status::bad_model, "'" + path.string() + "' is " + std::to_string(size) +
                                " bytes, more than the " + std::to_string(max_bytes) + " expected");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(Status::io, "cannot open '" + path.string() + "'");
  std::string text(size_t(size), '\0');
  in.read(text.data(), std::streamsize(size));
  if (size_t(in.gcount()) != size) fail(Status::io, "cannot read '" + path.string() + "'");
  refuse_placeholder_file(path.string(), text);
  return text;
}

std::string read_optional_text_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 &&
      !ec) {
    return {};
  }
  return read_text_file(path, max_bytes);
}

}  // namespace parley::model

#include "model/placeholder_file.h"

#include "common/error.h"

namespace parley::model {

namespace {

// The first line of every Git LFS pointer file (git-lfs docs/spec.md).
constexpr std::string_view kLfsPointerStart = "version https://git-lfs.github.com/spec/";

}  // namespace

void refuse_placeholder_file(const std::string& path, std::string_view contents) {
  if (contents.empty()) fail(Status::bad_model, "'" + path + "' is empty (0 bytes)");
  if (contents.starts_with(kLfsPointerStart)) {
    fail(Status::bad_model, "'" + path +
                                "' is a Git LFS pointer, not the file itself: fetch it with "
                                "`git lfs pull`");
  }
}

}  // namespace parley::model

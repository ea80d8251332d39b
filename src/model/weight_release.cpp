#include "model/weight_release.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace parley::model {
namespace {

bool in_mapped_file(const TensorView& view,
                    std::span<const std::span<const std::byte>> mapped_files) {
  return std::any_of(mapped_files.begin(), mapped_files.end(), [&](auto file) {
    return view.data >= file.data() && view.data + view.n_bytes <= file.data() + file.size();
  });
}

std::vector<std::span<const std::byte>> file_spans(const LoadedModel& model) {
  std::vector<std::span<const std::byte>> spans;
  for (const auto& file : model.files) spans.push_back(file->bytes());
  return spans;
}

}  // namespace

void drop_file_pages(const TensorView& view,
                     std::span<const std::span<const std::byte>> mapped_files) {
  if (view.empty() || !in_mapped_file(view, mapped_files)) return;
  const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
  const auto begin = (uintptr_t(view.data) + page - 1) / page * page;
  const auto end = (uintptr_t(view.data) + view.n_bytes) / page * page;
  // A private mapping never written: dropped pages come back from the file, never as zeros.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void drop_file_pages(const LoadedModel& model, const TensorView& view) {
  drop_file_pages(view, file_spans(model));
}

void release_weight_bytes(LoadedModel& model, const TensorView& view) {
  const std::byte* const data = view.data;  // `view` may be one of the views emptied below
  if (data == nullptr) return;
  const size_t freed = std::erase_if(model.weights.owned, [&](const OwnedBytes& b) {
    return b.data() == data && b.size() == view.n_bytes;
  });
  if (freed == 0) drop_file_pages(model, view);
  for (TensorView* v : weight_views(model.weights)) {
    if (v->data == data) v->data = nullptr;
  }
}

}  // namespace parley::model

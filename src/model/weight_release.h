// Letting go of a model's weight bytes once a backend holds its own copy of them, so that a
// process does not hold its model twice.
#pragma once

#include <cstddef>
#include <span>

#include "model/model_loader.h"
#include "model/weights.h"

namespace parley::model {

// Drops from the resident set the whole pages of `view`'s bytes when they lie in one of
// `mapped_files` (read-only private mappings, never written): a later read maps them again
// from the file (the page cache keeps them), so the view stays valid. Bytes elsewhere are left
// alone. A hint; its failure is ignored.
void drop_file_pages(const TensorView& view,
                     std::span<const std::span<const std::byte>> mapped_files);

// The same for a view of `model`'s weights, over the model's own file mappings.
void drop_file_pages(const LoadedModel& model, const TensorView& view);

// For a model that serves one backend, once that backend holds its own copy of `view`: frees
// the buffer the weights own for exactly these bytes (a tensor rewritten at load: Hugging Face
// q/k rows, norms converted to F32, tensors realigned), else drops their file pages; then
// empties every view of these bytes (data null, shape kept), so that a later reader meets a
// missing weight instead of freed memory. An empty view is a no-op.
void release_weight_bytes(LoadedModel& model, const TensorView& view);

}  // namespace parley::model

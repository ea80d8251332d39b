#include "model_source.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "common/memory_room.h"
#include "synthetic_weights.h"

namespace parley::bench {
namespace {

// Building weights that do not fit would only end in swapping or the OOM killer, minutes
// later; say so before allocating. The KV cache, scratch buffers and the layer the CPU backend
// is copying (it frees each source once copied) need room too, hence the margin.
constexpr double kMaxShareOfAvailable = 0.9;

void require_memory_for(const SyntheticShape& shape, model::DType dtype) {
  const auto available = mem_available_bytes();
  if (!available) return;
  const uint64_t needed = synthetic_weight_bytes(shape, dtype);
  if (double(needed) <= kMaxShareOfAvailable * double(*available)) return;
  char why[320];
  std::snprintf(why, sizeof why,
                "--synthetic %s in %s needs %.1f GB for its weights, but MemAvailable in "
                "/proc/meminfo is %.1f GB; try a smaller --weights type (f16, q8_0)",
                std::string(shape.name).c_str(), std::string(model::dtype_name(dtype)).c_str(),
                double(needed) / 1e9, double(*available) / 1e9);
  throw std::invalid_argument(why);
}

SyntheticShape known_shape(const std::string& name) {
  const auto shape = find_synthetic_shape(name);
  if (!shape) {
    std::string known;
    for (const SyntheticShape& s : synthetic_shapes()) known.append(" ").append(s.name);
    throw std::invalid_argument("unknown --synthetic '" + name + "'; known:" + known);
  }
  return *shape;
}

}  // namespace

void require_memory_for_synthetic(const BenchArgs& args) {
  if (args.synthetic.empty()) return;
  require_memory_for(known_shape(args.synthetic), synthetic_weights(args));
}

ModelSource::ModelSource(const BenchArgs& args)
    : synthetic_(args.synthetic),
      synthetic_dtype_(args.synthetic.empty() ? model::DType::f16 : synthetic_weights(args)),
      seed_(args.seed),
      model_path_(args.model_path),
      label_(args.synthetic.empty() ? args.model_path : "synthetic:" + args.synthetic) {
  const auto start = std::chrono::steady_clock::now();
  first_ = build();
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  n_params_ = first_->n_params;
}

std::unique_ptr<model::LoadedModel> ModelSource::build() const {
  if (synthetic_.empty()) return model::load_model(model_path_);
  return make_synthetic_model(known_shape(synthetic_), synthetic_dtype_, seed_);
}

std::unique_ptr<model::LoadedModel> ModelSource::make_model() const {
  if (first_) return std::move(first_);
  return build();
}

}  // namespace parley::bench

#include "model_source.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "available_memory.h"
#include "synthetic_weights.h"

namespace parley::bench {
namespace {

// Building weights that do not fit would only end in swapping or the OOM killer, minutes
// later; say so before allocating. The KV cache and scratch buffers need room too, hence
// the margin.
constexpr double kMaxShareOfAvailable = 0.9;

// `copies`: how many times the weights are held (the CPU backend copies the matrices of
// weights in memory, cpu_matrix.h, so a synthetic model runs there on two).
void require_memory_for(const SyntheticShape& shape, model::DType dtype, int copies) {
  const auto available = mem_available_bytes();
  if (!available) return;
  const uint64_t needed = synthetic_weight_bytes(shape, dtype) * uint64_t(copies);
  if (double(needed) <= kMaxShareOfAvailable * double(*available)) return;
  char why[320];
  std::snprintf(why, sizeof why,
                "--synthetic %s in %s needs %.1f GB for its weights%s, but MemAvailable in "
                "/proc/meminfo is %.1f GB; try a smaller --weights type (f16, q8_0)",
                std::string(shape.name).c_str(), std::string(model::dtype_name(dtype)).c_str(),
                double(needed) / 1e9, copies > 1 ? " (and the CPU backend's copy)" : "",
                double(*available) / 1e9);
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
  const bool on_cuda = args.device.rfind("cuda", 0) == 0;
  require_memory_for(known_shape(args.synthetic), synthetic_weights(args), on_cuda ? 1 : 2);
}

ModelSource::ModelSource(const BenchArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  if (!args.synthetic.empty()) {
    synthetic_ =
        make_synthetic_model(known_shape(args.synthetic), synthetic_weights(args), args.seed);
    label_ = std::string("synthetic:").append(args.synthetic);
    n_params_ = synthetic_->n_params;
  } else {
    // Loaded once here to report the time and fail early; each engine loads its own.
    n_params_ = model::load_model(args.model_path)->n_params;
    model_path_ = args.model_path;
    label_ = args.model_path;
  }
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<model::LoadedModel> ModelSource::view() const {
  if (!synthetic_) return model::load_model(model_path_);
  auto v = std::make_unique<model::LoadedModel>();
  v->config = synthetic_->config;
  v->tokenizer = synthetic_->tokenizer;
  v->fingerprint = synthetic_->fingerprint;
  v->n_params = synthetic_->n_params;
  // TensorViews are plain pointers; `owned` stays with the source.
  const model::Weights& w = synthetic_->weights;
  v->weights.tok_embd = w.tok_embd;
  v->weights.layers = w.layers;
  v->weights.output_norm = w.output_norm;
  v->weights.output = w.output;
  v->weights.tied_output = w.tied_output;
  return v;
}

}  // namespace parley::bench

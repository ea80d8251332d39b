#include "model_source.h"

#include <chrono>
#include <stdexcept>

#include "synthetic_weights.h"

namespace parley::bench {

ModelSource::ModelSource(const BenchArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  if (!args.synthetic.empty()) {
    const auto shape = find_synthetic_shape(args.synthetic);
    if (!shape) {
      std::string known;
      for (const SyntheticShape& s : synthetic_shapes()) known.append(" ").append(s.name);
      throw std::invalid_argument("unknown --synthetic '" + args.synthetic + "'; known:" + known);
    }
    model_ = make_synthetic_model(*shape, args.dtype, args.seed);
    label_ = std::string("synthetic:").append(args.synthetic);
  } else {
    model_ = model::load_model(args.model_path);
    label_ = args.model_path;
  }
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<model::LoadedModel> ModelSource::view() const {
  auto v = std::make_unique<model::LoadedModel>();
  v->config = model_->config;
  v->tokenizer = model_->tokenizer;
  v->fingerprint = model_->fingerprint;
  v->n_params = model_->n_params;
  // TensorViews are plain pointers; `owned` and `files` stay with the source.
  const model::Weights& w = model_->weights;
  v->weights.tok_embd = w.tok_embd;
  v->weights.layers = w.layers;
  v->weights.output_norm = w.output_norm;
  v->weights.output = w.output;
  v->weights.tied_output = w.tied_output;
  return v;
}

}  // namespace parley::bench

// Random weights of a known shape, built in memory: no file is read or written.
#pragma once

#include <cstdint>
#include <memory>

#include "model/dtype.h"
#include "model/model_loader.h"
#include "synthetic_shapes.h"

namespace parley::bench {

// Matrices in `dtype` (Q8_0 falls back to F16 for rows that are not a multiple of 32, as
// llama.cpp's tools do), norm vectors in F32. Matrix values are uniform with variance 1/cols,
// so activations stay O(1) through the layers. Deterministic in `seed`, whatever the number
// of threads filling them.
std::unique_ptr<model::LoadedModel> make_synthetic_model(const SyntheticShape& shape,
                                                         model::DType dtype, uint64_t seed);

// The bytes make_synthetic_model would allocate for the tensors, without building them.
uint64_t synthetic_weight_bytes(const SyntheticShape& shape, model::DType dtype);

}  // namespace parley::bench

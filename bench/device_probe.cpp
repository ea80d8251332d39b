#include "device_probe.h"

#include <stdexcept>

#include "backend/backend.h"
#include "common/error.h"
#include "synthetic_weights.h"

namespace parley::bench {

void require_device(const std::string& device) {
  // The smallest known shape: built in milliseconds.
  const auto model =
      make_synthetic_model(*find_synthetic_shape("stories260k-shape"), model::DType::f32, 1);
  try {
    backend::make_backend(device, *model, 1);
  } catch (const Error& e) {
    throw std::invalid_argument("--device " + device + ": " + e.what());
  }
}

}  // namespace parley::bench

// Whether the engine can run on a device, asked before a large model is built: a device
// this build or machine lacks should be reported at once, not after minutes of loading.
#pragma once

#include <string>

namespace parley::bench {

// Opens a backend on `device` for a tiny synthetic model. Throws std::invalid_argument
// with the engine's reason when it cannot.
void require_device(const std::string& device);

}  // namespace parley::bench

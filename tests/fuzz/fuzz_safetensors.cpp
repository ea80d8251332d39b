// Fuzz entry point of the safetensors reader: the header and its tensor table, and the same
// bytes as a shard index. Any input must end in a clean parley::Error or a table whose every
// tensor lies inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "common/error.h"
#include "model/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parley;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const model::SafetensorsFile file = model::parse_safetensors(bytes, "fuzz");
    for (const model::SafetensorsTensor& t : file.tensors) {
      // The views must stay inside the input, whatever the header said.
      if (t.data.size() && (t.data.data() < bytes.data() ||
                            t.data.data() + t.data.size() > bytes.data() + bytes.size())) {
        std::abort();
      }
    }
  } catch (const Error&) {
  }
  try {
    (void)model::parse_safetensors_index(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz index");
  } catch (const Error&) {
  }
  return 0;
}

#include "support/safetensors_builder.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace parley::test {

std::string safetensors_file(const std::vector<SafetensorsEntry>& tensors) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const SafetensorsEntry& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  return safetensors_raw(text, data);
}

std::string safetensors_raw(const std::string& header, const std::string& data,
                            std::optional<uint64_t> declared_length) {
  const uint64_t n = declared_length.value_or(header.size());
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace parley::test

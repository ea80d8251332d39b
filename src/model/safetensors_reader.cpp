#include "model/safetensors_reader.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/error.h"
#include "model/json_shown.h"
#include "model/text_file.h"

namespace parley::model {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxIndexBytes = 64u * 1000u * 1000u;

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

[[noreturn]] void bad(std::string_view label, const std::string& what) {
  fail(Status::bad_model, "safetensors " + quote(label) + ": " + what);
}

// Safetensors dtype name -> our dtype and its element size. Known types we do not run are
// unsupported; names the format never defined are bad_model.
DType tensor_dtype(const std::string& name, std::string_view label, const std::string& tensor) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  static constexpr std::string_view kKnown[] = {
      "F64",  "I64",     "U64",     "I32",     "U32",     "I16",     "U16", "I8", "U8",
      "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64"};
  if (std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown)) {
    fail(Status::unsupported, "safetensors " + quote(label) + ": tensor " + quote(tensor) +
                                  ": dtype " + name + " is not supported (F32, F16 and BF16 are)");
  }
  bad(label, "tensor " + quote(tensor) + ": unknown dtype " + quote(name));
}

size_t element_size(DType t) { return row_bytes(t, 1); }

std::optional<uint64_t> as_u64(const json& j) {
  if (!j.is_number_unsigned()) return std::nullopt;
  return j.get<uint64_t>();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Extent {
  uint64_t begin, end;
  size_t tensor;
};

SafetensorsTensor read_entry(const std::string& name, const json& entry, uint64_t data_size,
                             std::string_view label, Extent& extent) {
  const std::string what = "tensor " + quote(name) + ": ";
  if (!entry.is_object()) bad(label, what + "entry is not an object");
  const auto dt = entry.find("dtype");
  if (dt == entry.end() || !dt->is_string()) bad(label, what + "dtype missing or not a string");
  SafetensorsTensor t;
  t.name = name;
  t.dtype = tensor_dtype(dt->get<std::string>(), label, name);

  const auto sh = entry.find("shape");
  if (sh == entry.end() || !sh->is_array()) bad(label, what + "shape missing or not an array");
  uint64_t n_elements = 1;
  for (const json& d : *sh) {
    const auto v = as_u64(d);
    if (!v || *v > uint64_t(INT64_MAX))
      bad(label, what + "shape entry " + json_shown(d) + " is not a non-negative integer");
    t.shape.push_back(int64_t(*v));
    if (__builtin_mul_overflow(n_elements, *v, &n_elements))
      bad(label, what + "shape product overflows 64 bits");
  }
  uint64_t n_bytes = 0;
  if (__builtin_mul_overflow(n_elements, uint64_t(element_size(t.dtype)), &n_bytes)) {
    bad(label, what + "byte size of shape " + shape_text(t.shape) + " overflows 64 bits");
  }

  const auto off = entry.find("data_offsets");
  if (off == entry.end() || !off->is_array() || off->size() != 2) {
    bad(label, what + "data_offsets missing or not [begin, end]");
  }
  const auto begin = as_u64((*off)[0]);
  const auto end = as_u64((*off)[1]);
  if (!begin || !end)
    bad(label, what + "data_offsets [" + json_shown((*off)[0]) + ", " + json_shown((*off)[1]) +
                   "] are not non-negative integers");
  if (*begin > *end)
    bad(label,
        what + "data_offsets begin " + std::to_string(*begin) + " > end " + std::to_string(*end));
  if (*end > data_size) {
    bad(label, what + "data_offsets end " + std::to_string(*end) + " lies past the data area (" +
                   std::to_string(data_size) + " bytes)");
  }
  if (*end - *begin != n_bytes) {
    bad(label, what + "data_offsets span " + std::to_string(*end - *begin) + " bytes but shape " +
                   shape_text(t.shape) + " of " + dt->get<std::string>() + " needs " +
                   std::to_string(n_bytes));
  }
  extent.begin = *begin;
  extent.end = *end;
  return t;
}

// Tensors must tile the data area exactly: a gap or a trailing byte means the header and the
// data disagree, and an overlap would alias two tensors.
void check_coverage(std::vector<Extent> extents, const std::vector<SafetensorsTensor>& tensors,
                    uint64_t data_size, std::string_view label) {
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const Extent& e : extents) {
    const SafetensorsTensor& t = tensors[e.tensor];
    if (e.begin > cursor) {
      bad(label, "gap of " + std::to_string(e.begin - cursor) +
                     " bytes in the data area before tensor " + quote(t.name) + " (bytes " +
                     std::to_string(cursor) + ".." + std::to_string(e.begin) + ")");
    }
    if (e.begin < cursor) {
      bad(label, "tensor " + quote(t.name) + " (data_offsets begin " + std::to_string(e.begin) +
                     ") overlaps tensor " + quote(previous ? previous->name : "") + " (ends at " +
                     std::to_string(cursor) + ")");
    }
    cursor = e.end;
    previous = &t;
  }
  if (cursor != data_size) {
    bad(label, std::to_string(data_size - cursor) +
                   " trailing bytes after the last tensor (data area " + std::to_string(data_size) +
                   " bytes, tensors end at " + std::to_string(cursor) + ")");
  }
}

}  // namespace

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view label) {
  if (bytes.size() < 8)
    bad(label, "file of " + std::to_string(bytes.size()) + " bytes has no 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian, as the format says
  if (header_len > kMaxSafetensorsHeaderBytes || header_len > bytes.size() - 8) {
    bad(label, "header too long: " + std::to_string(header_len) + " bytes (file " +
                   std::to_string(bytes.size()) + " bytes, limit " +
                   std::to_string(kMaxSafetensorsHeaderBytes) + ")");
  }
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  // A key given twice in one object is refused: JSON parsers disagree on which copy wins, so
  // two readers of one file would see different tensors.
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::optional<std::string> duplicate;
  const auto find_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && !duplicate &&
        !keys.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  const json header =
      json::parse(text, text + header_len, find_duplicates, /*allow_exceptions=*/false);
  if (header.is_discarded()) bad(label, "header is not valid JSON");
  if (duplicate) bad(label, "key " + quote(*duplicate) + " appears twice in the header");
  if (!header.is_object()) bad(label, "header is not a JSON object");

  const uint64_t data_size = bytes.size() - 8 - header_len;
  const std::byte* data = bytes.data() + 8 + header_len;
  SafetensorsFile file;
  std::vector<Extent> extents;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) bad(label, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) bad(label, "__metadata__ value of " + quote(k) + " is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    Extent e{0, 0, file.tensors.size()};
    SafetensorsTensor t = read_entry(name, entry, data_size, label, e);
    t.data = std::span<const std::byte>(data + e.begin, size_t(e.end - e.begin));
    file.tensors.push_back(std::move(t));
    extents.push_back(e);
  }
  check_coverage(std::move(extents), file.tensors, data_size, label);
  return file;
}

std::map<std::string, std::string> parse_safetensors_index(std::string_view text,
                                                           std::string_view label) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(label, "index is not valid JSON");
  if (!j.is_object()) bad(label, "index is not a JSON object");
  const auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) bad(label, "weight_map missing or not an object");
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : wm->items()) {
    if (!file.is_string()) bad(label, "weight_map entry " + quote(tensor) + " is not a string");
    const std::string name = file.get<std::string>();
    // Shards must be plain names inside the model directory, never a path out of it.
    if (name.empty() || name.find('/') != std::string::npos ||
        name.find('\\') != std::string::npos || name.find("..") != std::string::npos ||
        name.find('\0') != std::string::npos || name == ".") {
      bad(label, "weight_map entry " + quote(tensor) + ": shard file name " + quote(name) +
                     " is not a plain file name in the model directory");
    }
    map.emplace(tensor, name);
  }
  return map;
}

namespace {

std::span<const std::byte> map_file(const std::filesystem::path& path,
                                    std::vector<std::shared_ptr<MappedFile>>& files) {
  files.push_back(std::make_shared<MappedFile>(path.string()));
  return files.back()->bytes();
}

}  // namespace

std::vector<SafetensorsTensor> read_safetensors_dir(
    const std::filesystem::path& dir, std::vector<std::shared_ptr<MappedFile>>& files) {
  std::error_code ec;
  const auto single = dir / "model.safetensors";
  const auto index_path = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single, ec)) {
    return parse_safetensors(map_file(single, files), "model.safetensors").tensors;
  }
  if (!std::filesystem::exists(index_path, ec)) {
    fail(Status::bad_model,
         "'" + dir.string() + "' has neither model.safetensors nor model.safetensors.index.json");
  }
  const auto weight_map = parse_safetensors_index(read_text_file(index_path, kMaxIndexBytes),
                                                  "model.safetensors.index.json");
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : weight_map) shards.insert(shard);

  std::vector<SafetensorsTensor> all;
  std::map<std::string, std::string> found_in;  // tensor -> shard that holds it
  for (const std::string& shard : shards) {
    const auto path = dir / shard;
    if (!std::filesystem::is_regular_file(path, ec)) {
      fail(Status::bad_model,
           "safetensors index: shard '" + shard + "' is missing from '" + dir.string() + "'");
    }
    for (SafetensorsTensor& t : parse_safetensors(map_file(path, files), shard).tensors) {
      const auto [it, inserted] = found_in.emplace(t.name, shard);
      if (!inserted) {
        fail(Status::bad_model, "safetensors index: tensor '" + t.name + "' is in both '" +
                                    it->second + "' and '" + shard + "'");
      }
      const auto listed = weight_map.find(t.name);
      if (listed == weight_map.end()) {
        fail(Status::bad_model, "safetensors index: tensor '" + t.name + "' in shard '" + shard +
                                    "' is not listed in weight_map");
      }
      if (listed->second != shard) {
        fail(Status::bad_model, "safetensors index: weight_map puts tensor '" + t.name + "' in '" +
                                    listed->second + "' but it is in '" + shard + "'");
      }
      all.push_back(std::move(t));
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    if (!found_in.count(tensor)) {
      fail(Status::bad_model,
           "safetensors index: tensor '" + tensor + "' is missing from its shard '" + shard + "'");
    }
  }
  return all;
}

}  // namespace parley::model

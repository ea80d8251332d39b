#include "model/unused_tensors.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "common/error.h"

namespace parley::model {

namespace {

constexpr std::string_view kGgufRopeFreqs = "rope_freqs.weight";
constexpr std::string_view kHfInvFreq = ".self_attn.rotary_emb.inv_freq";

// The layer a per-layer tensor name belongs to ("blk.7.attn_q.bias" -> 7).
std::optional<int64_t> layer_of(std::string_view name, TensorNaming naming) {
  const std::string_view prefix = naming == TensorNaming::gguf ? "blk." : "model.layers.";
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.')
    return std::nullopt;
  return layer;
}

// llama.cpp divides each RoPE frequency by its factor: ones leave RoPE as the config says.
bool all_ones(const FileTensor& t) {
  const bool plain = t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16;
  if (t.blocks || !plain || t.shape.size() != 1 || t.shape[0] < 0) return false;
  const auto n = size_t(t.shape[0]);
  if (t.n_bytes != row_bytes(t.dtype, n)) return false;
  std::vector<float> factors(n);
  dequantize(t.dtype, t.data, n, factors.data());
  return std::all_of(factors.begin(), factors.end(), [](float f) { return f == 1.0f; });
}

// Whether an unused tensor only restates the config.
bool restates_config(const FileTensor& t, TensorNaming naming) {
  if (naming == TensorNaming::hugging_face) {
    return layer_of(t.name, naming) && std::string_view(t.name).ends_with(kHfInvFreq);
  }
  if (t.name != kGgufRopeFreqs) return false;
  if (!all_ones(t)) {
    fail(Status::unsupported, "tensor '" + t.name +
                                  "' scales the RoPE frequencies (llama3-style RoPE scaling), "
                                  "which is not supported");
  }
  return true;
}

// Why a tensor may be unused, where its name tells.
std::string reason(const std::string& name, TensorNaming naming, const ModelConfig& config) {
  const auto layer = layer_of(name, naming);
  if (layer && *layer >= config.n_layers) {
    const char* key = naming == TensorNaming::gguf ? "llama.block_count" : "num_hidden_layers";
    return "; the file holds more layers than the " + std::to_string(config.n_layers) + " " + key +
           " declares";
  }
  if (name.ends_with(".bias")) return "; biases are not supported (Llama's layers have none)";
  return "";
}

}  // namespace

void check_every_tensor_used(const std::vector<FileTensor>& tensors,
                             const std::unordered_set<std::string>& used, TensorNaming naming,
                             const ModelConfig& config) {
  const FileTensor* first = nullptr;
  size_t n_unused = 0;
  for (const FileTensor& t : tensors) {
    if (used.count(t.name) || restates_config(t, naming)) continue;
    if (!first) first = &t;
    ++n_unused;
  }
  if (!first) return;
  fail(Status::bad_model, "tensor '" + first->name + "' is not used by the model (unused: " +
                              std::to_string(n_unused) + " of " + std::to_string(tensors.size()) +
                              " tensors)" + reason(first->name, naming, config));
}

}  // namespace parley::model

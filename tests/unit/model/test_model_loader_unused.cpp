// Model files holding tensors the model would not use (attention biases, layers beyond the
// config's count) are refused as they load, not run as another network.
#include <doctest/doctest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "model/model_loader.h"
#include "support/error_check.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "support/tensor_codec.h"

using parley::Status;
using parley::model::DType;
using parley::model::load_model;
using parley::test::SynthSpec;

namespace {

// Sets a UINT32 metadata value of a GGUF file in place.
void set_gguf_u32(const std::filesystem::path& path, const std::string& key, uint32_t value) {
  std::string bytes = parley::test::read_file(path);
  const size_t at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  uint32_t type = 0;
  std::memcpy(&type, bytes.data() + at + key.size(), 4);
  REQUIRE(type == 4);  // GGUF's UINT32
  std::memcpy(bytes.data() + at + key.size() + 4, &value, 4);
  parley::test::write_bytes(path, bytes);
}

}  // namespace

TEST_CASE("loader: a GGUF whose llama.block_count is below the layers it stores is refused") {
  parley::test::TempDir tmp;
  SynthSpec spec;  // 2 layers
  const auto path = tmp / "m.gguf";
  parley::test::write_gguf(spec, parley::test::make_synth_weights(spec),
                           parley::test::make_spm_vocab(spec.n_vocab), path);
  REQUIRE_NOTHROW(load_model(path.string()));
  set_gguf_u32(path, "llama.block_count", 1);
  CHECK_PARLEY_ERROR(load_model(path.string()), Status::bad_model,
                     // 2 layers of 9 tensors, the embedding, the final norm and the output.
                     "'blk.1.attn_norm.weight' is not used", "unused: 9 of 21 tensors",
                     "llama.block_count");
}

TEST_CASE("loader: a Hugging Face config with fewer layers than the weights is refused") {
  parley::test::TempDir tmp;
  SynthSpec spec;  // 2 layers
  parley::test::write_bytes(tmp / "tok.model", "x");
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), tmp / "m",
                             tmp / "tok.model");
  REQUIRE_NOTHROW(load_model((tmp / "m").string()));
  auto config = nlohmann::json::parse(parley::test::read_file(tmp / "m" / "config.json"));
  config["num_hidden_layers"] = 1;
  parley::test::write_bytes(tmp / "m" / "config.json", config.dump());
  CHECK_PARLEY_ERROR(load_model((tmp / "m").string()), Status::bad_model,
                     "'model.layers.1.input_layernorm.weight' is not used", "num_hidden_layers");
}

TEST_CASE("loader: Hugging Face q/k/v biases the config does not mention are refused") {
  parley::test::TempDir tmp;
  SynthSpec spec;
  parley::test::write_bytes(tmp / "tok.model", "x");
  const auto dir = tmp / "m";
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), dir, tmp / "tok.model",
                             {.n_shards = 2});
  // The biases in a shard of their own, listed in the index as transformers lists shards.
  std::vector<parley::test::SafetensorsEntry> biases;
  auto index = nlohmann::json::parse(parley::test::read_file(dir / "model.safetensors.index.json"));
  for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
    const int64_t rows = int64_t(proj[0] == 'q' ? spec.n_heads : spec.n_kv_heads) * spec.hd();
    const std::string name = std::string("model.layers.0.self_attn.") + proj + ".bias";
    const std::vector<float> ones(size_t(rows), 1.0f);
    biases.push_back({name, "F32", {rows}, parley::test::encode_tensor(DType::f32, ones)});
    index["weight_map"][name] = "biases.safetensors";
  }
  parley::test::write_bytes(dir / "biases.safetensors", parley::test::safetensors_file(biases));
  parley::test::write_bytes(dir / "model.safetensors.index.json", index.dump());
  CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model, "bias' is not used",
                     "unused: 3 of 24 tensors", "biases are not supported");
}

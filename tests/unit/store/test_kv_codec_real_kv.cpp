// Real KV: stories260K runs a 200-token story (the greedy golden) on the CPU backend, and every
// block it fills, in each KV type, round-trips bit for bit; on INT8 the filter must pay.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "fuzz/kv_codec_samples.h"
#include "kv/block_pool.h"
#include "kv/kv_view.h"
#include "model/model_loader.h"
#include "support/shared_assets.h"
#include "store/kv_codec.h"

using namespace parley;

namespace {

std::vector<int32_t> golden_story(const std::string& jsonl) {
  std::istringstream lines(jsonl);
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("name") != "once_upon") continue;
    auto ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    const auto generated = j.at("generated_ids").get<std::vector<int32_t>>();
    ids.insert(ids.end(), generated.begin(), generated.end());
    return ids;
  }
  FAIL("no once_upon story in the golden file");
  return {};
}

struct FilledBlocks {
  kv::BlockPool pool;
  std::vector<kv::BlockId> ids;
  uint32_t n_tokens;
};

void run_model(backend::Backend& backend, const model::ModelConfig& config,
               const std::vector<int32_t>& tokens, FilledBlocks& out) {
  kv::KvView view(out.pool, out.ids, uint32_t(out.ids.size()) * kv::kBlockTokens);
  std::vector<float> logits(size_t(config.n_vocab));
  for (size_t pos = 0; pos < tokens.size(); pos += backend.max_batch()) {
    const size_t n = std::min<size_t>(backend.max_batch(), tokens.size() - pos);
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(tokens).subspan(pos, n);
    batch.start_pos = uint32_t(pos);
    backend.forward(batch, view, logits);
  }
}

}  // namespace

TEST_CASE("codec: real stories260K KV blocks round-trip bit for bit in every KV type") {
  PARLEY_SHARED_OR_SKIP(model_path, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SHARED_OR_SKIP(golden_path, "golden/stories260k_greedy.jsonl");
  const auto model = model::load_model(model_path.string());
  const auto backend = backend::make_backend("cpu", *model, 2);
  const std::vector<int32_t> tokens = golden_story(test::read_file(golden_path));
  REQUIRE(tokens.size() > 100);
  const model::ModelConfig& c = model->config;
  const kv::KvShape shape{c.n_layers, c.n_kv_heads, c.head_dim};
  const uint32_t n_blocks = uint32_t((tokens.size() + kv::kBlockTokens - 1) / kv::kBlockTokens);

  for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
    const std::string type_name = kv::kv_type_name(type);
    CAPTURE(type_name);
    const kv::BlockLayout layout(type, shape);
    FilledBlocks filled{kv::BlockPool(layout, uint64_t(n_blocks) * layout.block_bytes()), {},
                        uint32_t(tokens.size())};
    for (uint32_t b = 0; b < n_blocks; ++b) filled.ids.push_back(filled.pool.allocate());
    run_model(*backend, c, tokens, filled);

    size_t filtered_bytes = 0, plain_bytes = 0;
    for (uint32_t b = 0; b < n_blocks; ++b) {
      const uint32_t n =
          std::min<uint32_t>(kv::kBlockTokens, filled.n_tokens - b * kv::kBlockTokens);
      const std::byte* data = filled.pool.data(filled.ids[b]);
      const std::vector<std::byte> source(data, data + layout.block_bytes());
      for (bool filter : {true, false}) {
        CAPTURE(b);
        CAPTURE(filter);
        const auto blob = store::encode_kv_block(layout, model->fingerprint, data, n, {3, filter});
        (filter ? filtered_bytes : plain_bytes) += blob.size();
        const std::vector<std::byte> background(layout.block_bytes(), std::byte{0xC3});
        std::vector<std::byte> target = background;
        store::decode_kv_block(blob, layout, model->fingerprint, target.data());
        CHECK(target == test::with_slots(layout, background, source, n));
      }
    }
    MESSAGE(type_name << ": " << tokens.size() << " tokens, filtered "
                                   << filtered_bytes << " B, plain " << plain_bytes << " B");
    if (type == kv::KvType::int8) CHECK(filtered_bytes < plain_bytes);
  }
}

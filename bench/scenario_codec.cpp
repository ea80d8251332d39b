// codec: what the store pays on disk for KV, and how fast blobs are made and read back. The
// KV is real: the model runs a conversation (an English prompt, then a greedy reply) into
// blocks of its own pool, and every block is encoded as a spill would encode it, at several
// zstd levels, with and without the filter. One thread; every blob is also checked to decode
// bit for bit.
#include <algorithm>
#include <chrono>

#include "prompt_text.h"
#include "scenarios.h"
#include "store/kv_codec.h"
#include "store/kv_filter.h"

namespace parley::bench {
namespace {

constexpr uint32_t kPromptTokens = 240;
constexpr uint32_t kReplyTokens = 80;
constexpr int kLevels[] = {1, 3, 9, 19};

struct ConversationKv {
  std::unique_ptr<kv::BlockPool> pool;
  std::vector<kv::BlockId> blocks;
  uint32_t n_tokens = 0;

  uint32_t fill(size_t b) const {
    return std::min<uint32_t>(kv::kBlockTokens, n_tokens - uint32_t(b) * kv::kBlockTokens);
  }
};

// BOS, an English prompt, then a greedy reply, all fed through the engine's backend into a
// pool of our own (the engine's sessions keep their blocks to themselves).
ConversationKv run_conversation(engine::Engine& engine) {
  std::vector<int32_t> ids{engine.tokenizer().bos_id()};
  const uint32_t limit = engine.context_length();
  const uint32_t prompt = std::min(kPromptTokens, limit / 2);
  const auto text = engine.tokenizer().encode(text_of_tokens(engine.tokenizer(), prompt));
  ids.insert(ids.end(), text.begin(), text.end());
  const uint32_t total = std::min<uint32_t>(uint32_t(ids.size()) + kReplyTokens, limit);
  ids.resize(std::min<size_t>(ids.size(), total));

  ConversationKv kv;
  const kv::BlockLayout& layout = engine.kv_pool().layout();
  const uint32_t n_blocks = (total + kv::kBlockTokens - 1) / kv::kBlockTokens;
  kv.pool = std::make_unique<kv::BlockPool>(layout, uint64_t(n_blocks) * layout.block_bytes());
  for (uint32_t b = 0; b < n_blocks; ++b) kv.blocks.push_back(kv.pool->allocate());
  kv::KvView view(*kv.pool, kv.blocks, n_blocks * kv::kBlockTokens);

  backend::Backend& backend = engine.backend();
  std::vector<float> logits(size_t(engine.config().n_vocab));
  size_t pos = 0;
  while (pos < total) {
    if (pos == ids.size()) {  // past the prompt: the reply's next token
      ids.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    }
    const size_t n = std::min<size_t>(backend.max_batch(), ids.size() - pos);
    backend::Batch batch;
    batch.tokens = std::span<const int32_t>(ids).subspan(pos, n);
    batch.start_pos = uint32_t(pos);
    backend.forward(batch, view, logits);
    pos += n;
  }
  kv.n_tokens = total;
  return kv;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `pass` (one pass over every block) until `min_seconds` have gone by (at least once);
// seconds per pass.
template <typename Pass>
double time_passes(double min_seconds, const Pass& pass) {
  const auto start = std::chrono::steady_clock::now();
  int passes = 0;
  do {
    pass();
    ++passes;
  } while (seconds_since(start) < min_seconds);
  return seconds_since(start) / passes;
}

// Whether decoding `blobs` gives back the filled slots of every block of the conversation.
bool round_trips(const ConversationKv& kv, const std::vector<std::vector<std::byte>>& blobs,
                 uint64_t fingerprint) {
  const kv::BlockLayout& layout = kv.pool->layout();
  std::vector<std::byte> block(layout.block_bytes());
  for (size_t b = 0; b < blobs.size(); ++b) {
    store::decode_kv_block(blobs[b], layout, fingerprint, block.data());
    std::vector<std::byte> want(store::kv_payload_bytes(layout, kv.fill(b))), got(want.size());
    store::gather_kv_payload(layout, kv.pool->data(kv.blocks[b]), kv.fill(b), want);
    store::gather_kv_payload(layout, block.data(), kv.fill(b), got);
    if (want != got) return false;
  }
  return true;
}

}  // namespace

void run_codec(BenchContext& ctx) {
  for (kv::KvType kv_type : ctx.kv_types(kAllKvTypes)) {
    const auto engine = ctx.make_engine(kv_type);
    const ConversationKv kv = run_conversation(*engine);
    const kv::BlockLayout& layout = kv.pool->layout();
    const uint64_t fingerprint = engine->model().fingerprint;
    const uint64_t raw_bytes = kv.n_tokens * kv::kv_bytes_per_token(kv_type, layout.shape());
    const uint64_t f16_bytes =
        kv.n_tokens * kv::kv_bytes_per_token(kv::KvType::f16, layout.shape());

    for (int level : kLevels) {
      for (bool filter : {true, false}) {
        const store::KvCodecOptions options{level, filter};
        std::vector<std::vector<std::byte>> blobs(kv.blocks.size());
        const double encode_s = time_passes(ctx.args().codec_min_seconds, [&] {
          for (size_t b = 0; b < kv.blocks.size(); ++b) {
            blobs[b] = store::encode_kv_block(layout, fingerprint, kv.pool->data(kv.blocks[b]),
                                              kv.fill(b), options);
          }
        });
        std::vector<std::byte> target(layout.block_bytes());
        const double decode_s = time_passes(ctx.args().codec_min_seconds, [&] {
          for (const auto& blob : blobs) {
            store::decode_kv_block(blob, layout, fingerprint, target.data());
          }
        });
        uint64_t disk_bytes = 0;
        for (const auto& blob : blobs) disk_bytes += blob.size();

        nlohmann::ordered_json line = ctx.line("codec", *engine);
        line["zstd_level"] = level;
        line["filter"] = filter;
        line["tokens"] = kv.n_tokens;
        line["blocks"] = kv.blocks.size();
        line["kv_bytes_per_token"] = kv::kv_bytes_per_token(kv_type, layout.shape());
        line["disk_bytes_per_token"] = double(disk_bytes) / kv.n_tokens;
        line["ratio_vs_f16_kv"] = double(disk_bytes) / double(f16_bytes);
        line["ratio_vs_raw_kv"] = double(disk_bytes) / double(raw_bytes);
        line["encode_mb_s"] = double(raw_bytes) / encode_s / 1e6;
        line["decode_mb_s"] = double(raw_bytes) / decode_s / 1e6;
        line["round_trip_ok"] = round_trips(kv, blobs, fingerprint);
        ctx.write(line);
      }
    }
  }
}

}  // namespace parley::bench

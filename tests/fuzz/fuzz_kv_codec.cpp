// Fuzz entry point of the KV codec's decoder (libFuzzer interface), and its seed corpus.
//
// The store's unit tests compile this file (tests/unit/store/test_kv_codec_fuzz.cpp) and run
// the entry point over the seed corpus and many deterministic mutations of it, so CI's
// sanitizer build exercises it with no extra target. tests/fuzz/CMakeLists.txt builds it as
// the libFuzzer target fuzz_kv_codec (scripts/test-fuzz.sh) and replays corpus/kv_codec and
// the regressions through it in the ordinary build.
#include "fuzz/fuzz_kv_codec.h"

#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"
#include "store/kv_filter.h"

namespace parley::test {
namespace {

// Blocks a header may ask for are built only up to this size: enough for every seed, small
// enough that a hostile header cannot make the fuzzer allocate much.
constexpr uint64_t kMaxFuzzBlockBytes = uint64_t(1) << 20;

using Bytes = std::vector<std::byte>;

// Decodes `blob` as `layout`; when that succeeds, the slots must survive another round trip
// (a decoder that accepts bytes must hand back something the encoder reproduces).
void decode_and_check(std::span<const std::byte> blob, const kv::BlockLayout& layout,
                      uint64_t fingerprint) {
  Bytes block(layout.block_bytes(), std::byte{0x5A});
  store::KvBlobInfo info;
  try {
    info = store::decode_kv_block(blob, layout, fingerprint, block.data());
  } catch (const Error&) {
    return;  // refusing is the expected outcome for almost every input
  }
  const Bytes again = store::encode_kv_block(layout, fingerprint, block.data(), info.n_tokens,
                                             {1, info.filtered});
  Bytes block2(layout.block_bytes(), std::byte{0x5A});
  store::decode_kv_block(again, layout, fingerprint, block2.data());
  if (block2 != block) std::abort();
}

}  // namespace

const kv::BlockLayout& fuzz_kv_layout() {
  static const kv::BlockLayout layout(kv::KvType::int8, kv::KvShape{2, 2, 8});
  return layout;
}

std::vector<std::vector<uint8_t>> kv_codec_seed_corpus() {
  std::vector<std::vector<uint8_t>> corpus;
  auto add = [&](const Bytes& blob) {
    const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
    corpus.emplace_back(p, p + blob.size());
  };
  const kv::BlockLayout& int8 = fuzz_kv_layout();
  const Bytes int8_block = sample_kv_block(int8, 1);
  for (uint32_t n : {1u, 7u, 16u}) {
    for (bool filter : {true, false}) {
      add(store::encode_kv_block(int8, kFuzzFingerprint, int8_block.data(), n, {3, filter}));
    }
  }
  for (kv::KvType type : {kv::KvType::f16, kv::KvType::f32}) {
    const kv::BlockLayout layout(type, kv::KvShape{1, 2, 8});
    const Bytes block = sample_kv_block(layout, 2);
    add(store::encode_kv_block(layout, kFuzzFingerprint, block.data(), 5, {1, true}));
  }
  // Near misses that reach the frame checks: legacy magic, two frames.
  Bytes legacy = store::encode_kv_block(int8, kFuzzFingerprint, int8_block.data(), 3);
  legacy[68] = std::byte{0x27};  // 0xFD2FB527, zstd v0.7
  add(legacy);
  Bytes two = store::encode_kv_block(int8, kFuzzFingerprint, int8_block.data(), 2);
  const Bytes frame(two.begin() + 68, two.end());
  two.insert(two.end(), frame.begin(), frame.end());
  const uint64_t both = 2 * frame.size();
  for (int i = 0; i < 8; ++i) two[52 + size_t(i)] = std::byte((both >> (8 * i)) & 0xffu);
  add(two);
  return corpus;
}

int fuzz_kv_codec_one_input(const uint8_t* data, size_t size) {
  const std::span<const std::byte> blob(reinterpret_cast<const std::byte*>(data), size);
  decode_and_check(blob, fuzz_kv_layout(), kFuzzFingerprint);
  // Also as the layout the header states, so that mutated shapes and types reach the
  // payload code instead of stopping at the layout comparison.
  store::KvBlobInfo info;
  try {
    info = store::peek_kv_block(blob);
  } catch (const Error&) {
    return 0;
  }
  const uint64_t bytes_per_token = info.raw_bytes / info.n_tokens;
  if (bytes_per_token > kMaxFuzzBlockBytes / kv::kBlockTokens) return 0;
  decode_and_check(blob, kv::BlockLayout(info.type, info.shape), info.model_fingerprint);
  return 0;
}

}  // namespace parley::test

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return parley::test::fuzz_kv_codec_one_input(data, size);
}

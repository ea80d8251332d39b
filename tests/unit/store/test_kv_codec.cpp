// The KV codec round-trips blocks bit for bit: every KV type, shape and fill, filtered or not,
// at any zstd level, from any thread; it stores only the filled slots and touches no others.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"

using namespace parley;
using namespace parley::kv;
using namespace parley::store;
using parley::test::sample_kv_block;
using parley::test::with_slots;

namespace {

constexpr uint64_t kFingerprint = 0x0123456789abcdefull;

const KvShape kShapes[] = {
    {1, 1, 8}, {2, 2, 64}, {3, 4, 128}, {5, 4, 8}, {4, 3, 64}, {1, 4, 128},
};

std::string describe(const BlockLayout& layout, uint32_t n_tokens, bool filter) {
  const KvShape& s = layout.shape();
  return std::string(kv_type_name(layout.type())) + " " + std::to_string(s.n_layers) + "x" +
         std::to_string(s.n_kv_heads) + "x" + std::to_string(s.head_dim) + " n=" +
         std::to_string(n_tokens) + (filter ? " filtered" : " plain");
}

// Encodes slots [0, n) of `source`, decodes into a block of other bytes, checks the result.
void check_round_trip(const BlockLayout& layout, const std::vector<std::byte>& source,
                      uint32_t n_tokens, const KvCodecOptions& options) {
  CAPTURE(describe(layout, n_tokens, options.filter));
  CAPTURE(options.zstd_level);
  const auto blob = encode_kv_block(layout, kFingerprint, source.data(), n_tokens, options);
  std::vector<std::byte> target(layout.block_bytes(), std::byte{0xA5});
  const std::vector<std::byte> before = target;
  const KvBlobInfo info = decode_kv_block(blob, layout, kFingerprint, target.data());
  CHECK(target == with_slots(layout, before, source, n_tokens));
  CHECK(info.codec_version == kKvCodecVersion);
  CHECK(info.type == layout.type());
  CHECK(info.shape == layout.shape());
  CHECK(info.block_tokens == kBlockTokens);
  CHECK(info.n_tokens == n_tokens);
  CHECK(info.model_fingerprint == kFingerprint);
  CHECK(info.raw_bytes == n_tokens * kv_bytes_per_token(layout.type(), layout.shape()));
  CHECK(info.compressed_bytes + 68 == blob.size());
  CHECK(info.filtered == options.filter);
}

}  // namespace

TEST_CASE("codec: every KV type, shape, fill and filter setting round-trips bit for bit") {
  uint32_t seed = 1;
  for (KvType type : {KvType::int8, KvType::f16, KvType::f32}) {
    for (const KvShape& shape : kShapes) {
      const BlockLayout layout(type, shape);
      const auto source = sample_kv_block(layout, seed++);
      for (uint32_t n : {1u, 7u, 16u}) {
        for (bool filter : {true, false}) check_round_trip(layout, source, n, {3, filter});
      }
    }
  }
}

TEST_CASE("codec: arbitrary bytes round-trip too, not only well-formed KV") {
  const BlockLayout layout(KvType::int8, KvShape{2, 3, 8});
  std::vector<std::byte> source(layout.block_bytes());
  uint32_t x = 7;
  for (std::byte& b : source) b = std::byte((x = x * 1103515245u + 12345u) >> 24);
  for (uint32_t n = 1; n <= kBlockTokens; ++n) check_round_trip(layout, source, n, {3, true});
  const BlockLayout f16(KvType::f16, KvShape{2, 3, 8});
  source.resize(f16.block_bytes());
  for (uint32_t n = 1; n <= kBlockTokens; ++n) check_round_trip(f16, source, n, {3, true});
}

TEST_CASE("codec: zstd levels from negative to 19 all decode") {
  const BlockLayout layout(KvType::int8, KvShape{2, 2, 64});
  const auto source = sample_kv_block(layout, 42);
  for (int level : {-5, 1, 3, 9, 19}) {
    for (bool filter : {true, false}) check_round_trip(layout, source, 16, {level, filter});
  }
}

TEST_CASE("codec: the unfilled tail costs no bytes and does not change the blob") {
  const BlockLayout layout(KvType::int8, KvShape{3, 2, 64});
  const auto a = sample_kv_block(layout, 1);
  const auto b = with_slots(layout, sample_kv_block(layout, 2), a, 5);  // same 5 slots
  const auto blob_a = encode_kv_block(layout, kFingerprint, a.data(), 5);
  CHECK(blob_a == encode_kv_block(layout, kFingerprint, b.data(), 5));
  CHECK(blob_a.size() < encode_kv_block(layout, kFingerprint, a.data(), 16).size());
}

TEST_CASE("codec: peek reads the header that decode checks") {
  const BlockLayout layout(KvType::f16, KvShape{2, 4, 8});
  const auto source = sample_kv_block(layout, 3);
  const auto blob = encode_kv_block(layout, kFingerprint, source.data(), 9, {1, false});
  const KvBlobInfo info = peek_kv_block(blob);
  CHECK(info.type == KvType::f16);
  CHECK(info.shape == layout.shape());
  CHECK(info.n_tokens == 9);
  CHECK_FALSE(info.filtered);
  CHECK(info.model_fingerprint == kFingerprint);
  CHECK(info.raw_bytes == 9 * kv_bytes_per_token(KvType::f16, layout.shape()));
  std::vector<std::byte> target(layout.block_bytes());
  const KvBlobInfo decoded = decode_kv_block(blob, layout, kFingerprint, target.data());
  CHECK(decoded.checksum == info.checksum);
  CHECK(decoded.compressed_bytes == info.compressed_bytes);
}

TEST_CASE("codec: encode refuses a fill outside 1..16 and an unknown zstd level") {
  const BlockLayout layout(KvType::int8, KvShape{1, 1, 8});
  const auto source = sample_kv_block(layout, 4);
  for (uint32_t n : {0u, 17u}) {
    CAPTURE(n);
    try {
      encode_kv_block(layout, kFingerprint, source.data(), n);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.status() == Status::invalid_argument);
    }
  }
  try {
    encode_kv_block(layout, kFingerprint, source.data(), 4, {1000, true});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
  }
}

TEST_CASE("codec: threads encode and decode at the same time, each with its own contexts") {
  const BlockLayout layout(KvType::int8, KvShape{2, 4, 64});
  std::vector<std::vector<std::byte>> sources;
  for (uint32_t i = 0; i < 4; ++i) sources.push_back(sample_kv_block(layout, 100 + i));
  std::vector<int> failures(sources.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < sources.size(); ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t round = 0; round < 50; ++round) {
        const uint32_t n = 1 + (round + uint32_t(t)) % kBlockTokens;
        const auto blob = encode_kv_block(layout, kFingerprint, sources[t].data(), n,
                                          {1 + int(round % 3), round % 2 == 0});
        std::vector<std::byte> target(layout.block_bytes(), std::byte{0});
        decode_kv_block(blob, layout, kFingerprint, target.data());
        const std::vector<std::byte> zero(layout.block_bytes(), std::byte{0});
        if (target != with_slots(layout, zero, sources[t], n)) ++failures[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);
}

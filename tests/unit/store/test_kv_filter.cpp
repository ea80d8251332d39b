// The payload of a block (its filled slots, gathered) and the filter that regroups it before
// zstd: the layout is pinned by small worked examples, and the inverse is exact on any bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "common/error.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_filter.h"

using namespace parley;
using namespace parley::kv;
using namespace parley::store;

namespace {

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (std::byte& b : v) b = std::byte(rng() & 0xffu);
  return v;
}

std::vector<std::byte> of(std::initializer_list<int> values) {
  std::vector<std::byte> v;
  for (int x : values) v.push_back(std::byte(uint8_t(x)));
  return v;
}

}  // namespace

TEST_CASE("codec filter: payload size is n_tokens x bytes per token") {
  const KvShape shape{3, 2, 8};
  for (KvType type : {KvType::int8, KvType::f16, KvType::f32}) {
    const BlockLayout layout(type, shape);
    for (uint32_t n : {1u, 7u, 16u}) {
      CHECK(kv_payload_bytes(layout, n) == n * kv_bytes_per_token(type, shape));
    }
  }
  CHECK(kv_payload_bytes(BlockLayout(KvType::int8, shape), 16) ==
        BlockLayout(KvType::int8, shape).block_bytes());
}

TEST_CASE("codec filter: gather then scatter restores the filled slots and writes no others") {
  for (KvType type : {KvType::int8, KvType::f16, KvType::f32}) {
    const BlockLayout layout(type, KvShape{3, 2, 8});
    const auto source = test::sample_kv_block(layout, 9);
    for (uint32_t n : {1u, 5u, 16u}) {
      CAPTURE(n);
      std::vector<std::byte> payload(kv_payload_bytes(layout, n));
      gather_kv_payload(layout, source.data(), n, payload);
      const std::vector<std::byte> background(layout.block_bytes(), std::byte{0x3C});
      std::vector<std::byte> target = background;
      scatter_kv_payload(layout, payload, n, target.data());
      CHECK(target == test::with_slots(layout, background, source, n));
    }
  }
}

TEST_CASE("codec filter: payload order is K slots, V slots per layer, then INT8 scales") {
  // 2 layers, 1 head, head_dim 2, 2 tokens: values layer-major, K before V, token-major.
  const BlockLayout layout(KvType::int8, KvShape{2, 1, 2});
  std::vector<std::byte> block(layout.block_bytes(), std::byte{0});
  for (int32_t l = 0; l < 2; ++l) {
    for (uint32_t t = 0; t < 2; ++t) {
      for (int d = 0; d < 2; ++d) {
        const size_t at = size_t(d);
        block[layout.k_offset(l, t, 0) + at] = std::byte(uint8_t(0x10 * (l + 1) + 2 * t + d));
        block[layout.v_offset(l, t, 0) + at] = std::byte(uint8_t(0x80 + 0x10 * l + 2 * t + d));
      }
      const float ks = float(10 * l + t), vs = float(100 + 10 * l + t);
      std::memcpy(block.data() + layout.k_scale_offset(l, t, 0), &ks, 4);
      std::memcpy(block.data() + layout.v_scale_offset(l, t, 0), &vs, 4);
    }
  }
  std::vector<std::byte> payload(kv_payload_bytes(layout, 2));
  gather_kv_payload(layout, block.data(), 2, payload);
  const auto values = of({0x10, 0x11, 0x12, 0x13, 0x80, 0x81, 0x82, 0x83,
                          0x20, 0x21, 0x22, 0x23, 0x90, 0x91, 0x92, 0x93});
  CHECK(std::equal(values.begin(), values.end(), payload.begin()));
  const float scales[] = {0, 1, 100, 101, 10, 11, 110, 111};
  CHECK(std::memcmp(payload.data() + values.size(), scales, sizeof scales) == 0);
}

TEST_CASE("codec filter: INT8 values channel-major, K as deltas across tokens, scales as planes") {
  const BlockLayout layout(KvType::int8, KvShape{1, 1, 2});
  // 3 tokens: K rows (1,2) (4,8) (3,1); V rows (5,6) (7,8) (9,10); scales K 1.0 2.0 4.0,
  // V 0.5 0.25 8.0.
  auto payload = of({1, 2, 4, 8, 3, 1, 5, 6, 7, 8, 9, 10});
  const float scales[] = {1.0f, 2.0f, 4.0f, 0.5f, 0.25f, 8.0f};
  const size_t values_end = payload.size();
  payload.resize(values_end + sizeof scales);
  std::memcpy(payload.data() + values_end, scales, sizeof scales);
  REQUIRE(payload.size() == kv_payload_bytes(layout, 3));

  std::vector<std::byte> filtered(payload.size());
  filter_kv_payload(layout, 3, payload, filtered);
  // K channel 0: 1, 4-1, 3-4; channel 1: 2, 8-2, 1-8 (mod 256). V channels as they are.
  const auto want_values = of({1, 3, 255, 2, 6, 249, 5, 7, 9, 6, 8, 10});
  CHECK(std::equal(want_values.begin(), want_values.end(), filtered.begin()));
  // Byte b of every scale, then byte b + 1 ...
  for (size_t b = 0; b < 4; ++b) {
    for (size_t i = 0; i < 6; ++i) {
      CHECK(filtered[values_end + b * 6 + i] ==
            payload[values_end + i * 4 + b]);
    }
  }
}

TEST_CASE("codec filter: F16 values go channel-major and split into low and high byte planes") {
  const BlockLayout layout(KvType::f16, KvShape{1, 1, 2});
  // 2 tokens x (K, V) x 2 channels of 2 bytes: element e = {lo 0x0e, hi 0xe0 + e}.
  std::vector<std::byte> payload;
  for (int e = 0; e < 8; ++e) {
    payload.push_back(std::byte(uint8_t(e)));
    payload.push_back(std::byte(uint8_t(0xE0 + e)));
  }
  REQUIRE(payload.size() == kv_payload_bytes(layout, 2));
  std::vector<std::byte> filtered(payload.size());
  filter_kv_payload(layout, 2, payload, filtered);
  // Elements in payload order: K t0 c0=0 c1=1, K t1 c0=2 c1=3, V t0 4 5, V t1 6 7.
  // Channel-major: K c0 (0, 2), K c1 (1, 3), V c0 (4, 6), V c1 (5, 7).
  CHECK(filtered == of({0, 2, 1, 3, 4, 6, 5, 7, 0xE0, 0xE2, 0xE1, 0xE3, 0xE4, 0xE6, 0xE5, 0xE7}));
}

TEST_CASE("codec filter: the inverse is exact on any bytes, for every type, shape and fill") {
  uint32_t seed = 1;
  for (KvType type : {KvType::int8, KvType::f16, KvType::f32}) {
    for (const KvShape& shape : {KvShape{1, 1, 8}, KvShape{2, 3, 64}, KvShape{5, 4, 8},
                                 KvShape{1, 2, 128}}) {
      const BlockLayout layout(type, shape);
      for (uint32_t n = 1; n <= kBlockTokens; ++n) {
        CAPTURE(kv_type_name(type));
        CAPTURE(n);
        const auto payload = random_bytes(kv_payload_bytes(layout, n), seed++);
        std::vector<std::byte> filtered(payload.size()), restored(payload.size());
        filter_kv_payload(layout, n, payload, filtered);
        unfilter_kv_payload(layout, n, filtered, restored);
        CHECK(restored == payload);
        if (type != KvType::int8) {  // no deltas: a pure permutation of the bytes
          auto a = payload, b = filtered;
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          CHECK(a == b);
        }
      }
    }
  }
}

TEST_CASE("codec filter: wrong sizes and fills are refused") {
  const BlockLayout layout(KvType::int8, KvShape{1, 1, 8});
  std::vector<std::byte> block(layout.block_bytes());
  std::vector<std::byte> a(kv_payload_bytes(layout, 4)), b(a.size() + 1);
  CHECK_THROWS_AS(filter_kv_payload(layout, 4, a, b), Error);
  CHECK_THROWS_AS(unfilter_kv_payload(layout, 4, b, a), Error);
  CHECK_THROWS_AS(filter_kv_payload(layout, 0, a, a), Error);
  CHECK_THROWS_AS(gather_kv_payload(layout, block.data(), 17, a), Error);
  CHECK_THROWS_AS(scatter_kv_payload(layout, b, 4, block.data()), Error);
}

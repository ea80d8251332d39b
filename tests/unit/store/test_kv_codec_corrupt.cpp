// Decoding a damaged or foreign blob fails with the right status and leaves the block as it
// was: corrupt for anything wrong with the bytes, model_mismatch for a blob that is fine but
// was made for another model or KV layout.
#include <doctest/doctest.h>
#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"
#include "store/kv_filter.h"

using namespace parley;
using namespace parley::kv;
using namespace parley::store;

namespace {

constexpr uint64_t kFingerprint = 0xfeedface12345678ull;
// Field offsets of the v1 header (kv_codec.cpp); the frame starts at kFrame.
constexpr size_t kVersion = 4, kFlags = 8, kType = 12, kLayers = 16, kHeads = 20,
                 kHeadDim = 24, kBlockTokensAt = 28, kTokens = 32, kFingerprintAt = 36,
                 kRaw = 44, kCompressed = 52, kChecksum = 60, kFrame = 68;

const BlockLayout kLayout(KvType::int8, KvShape{1, 1, 8});
constexpr uint32_t kTokensInBlob = 3;

using Bytes = std::vector<std::byte>;

struct Outcome {
  Status status = Status::ok;
  std::string message;
  Bytes block;  // the target block after the call
};

const Bytes& background() {
  static const Bytes b(kLayout.block_bytes(), std::byte{0x77});
  return b;
}

Outcome decode(const Bytes& blob, const BlockLayout& layout = kLayout,
               uint64_t fingerprint = kFingerprint) {
  Outcome out;
  out.block.assign(layout.block_bytes(), std::byte{0x77});
  try {
    decode_kv_block(blob, layout, fingerprint, out.block.data());
  } catch (const Error& e) {
    out.status = e.status();
    out.message = e.what();
  }
  return out;
}

// A failure must name its cause and leave the target untouched.
void check_fails(const Bytes& blob, Status want, const std::string& message_part = "") {
  const Outcome o = decode(blob);
  CHECK(o.status == want);
  CHECK(o.block == background());
  if (!message_part.empty()) CHECK(o.message.find(message_part) != std::string::npos);
}

const Bytes& source_block() {
  static const Bytes b = test::sample_kv_block(kLayout, 11);
  return b;
}

Bytes small_blob(bool filter = true) {
  return encode_kv_block(kLayout, kFingerprint, source_block().data(), kTokensInBlob,
                         {3, filter});
}

void put_u32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + size_t(i)] = std::byte((v >> (8 * i)) & 0xffu);
}
void put_u64(Bytes& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + size_t(i)] = std::byte((v >> (8 * i)) & 0xffu);
}
uint64_t get_u64(const Bytes& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(b[at + size_t(i)]);
  return v;
}

// The header of `blob` in front of `frame`, with compressed_bytes made to fit.
Bytes with_frame(const Bytes& blob, const Bytes& frame) {
  Bytes out(blob.begin(), blob.begin() + kFrame);
  out.insert(out.end(), frame.begin(), frame.end());
  put_u64(out, kCompressed, frame.size());
  return out;
}

Bytes frame_of(const Bytes& blob) { return Bytes(blob.begin() + kFrame, blob.end()); }

Bytes payload_of_source() {
  Bytes payload(kv_payload_bytes(kLayout, kTokensInBlob));
  gather_kv_payload(kLayout, source_block().data(), kTokensInBlob, payload);
  return payload;
}

// A zstd frame of `data` written with the stable advanced API.
Bytes zstd_frame(const Bytes& data, bool content_size = true) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  Bytes out(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(cctx);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

Bytes skippable_frame(size_t content_bytes) {
  Bytes f(8 + content_bytes, std::byte{0x42});
  put_u32(f, 0, ZSTD_MAGIC_SKIPPABLE_START + 3);
  put_u32(f, 4, uint32_t(content_bytes));
  return f;
}

}  // namespace

TEST_CASE("codec, corrupt: the small blob used below decodes when intact") {
  const Outcome o = decode(small_blob());
  REQUIRE(o.status == Status::ok);
  CHECK(o.block == test::with_slots(kLayout, background(), source_block(), kTokensInBlob));
}

TEST_CASE("codec, corrupt: a blob cut at any length is refused") {
  for (bool filter : {true, false}) {
    const Bytes blob = small_blob(filter);
    for (size_t len = 0; len < blob.size(); ++len) {
      CAPTURE(len);
      check_fails(Bytes(blob.begin(), blob.begin() + std::ptrdiff_t(len)), Status::corrupt);
    }
  }
}

TEST_CASE("codec, corrupt: every flipped byte and bit is caught, none is ignored") {
  const BlockLayout f16(KvType::f16, KvShape{1, 2, 8});
  const Bytes f16_source = test::sample_kv_block(f16, 5);
  struct Case {
    const BlockLayout& layout;
    Bytes blob;
  };
  const Case cases[] = {
      {kLayout, small_blob(true)},
      {kLayout, small_blob(false)},
      {f16, encode_kv_block(f16, kFingerprint, f16_source.data(), 2)},
  };
  for (const Case& c : cases) {
    const Bytes intact = decode(c.blob, c.layout).block;
    const Bytes untouched(c.layout.block_bytes(), std::byte{0x77});
    size_t ignored = 0;
    for (size_t i = 0; i < c.blob.size(); ++i) {
      for (int mask : {0xFF, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80}) {
        CAPTURE(i);
        CAPTURE(mask);
        Bytes damaged = c.blob;
        damaged[i] ^= std::byte(uint8_t(mask));
        const Outcome o = decode(damaged, c.layout);
        if (o.status == Status::ok) {
          ++ignored;
          CHECK(o.block == intact);  // allowed only if the byte does not matter at all
        } else {
          CHECK((o.status == Status::corrupt || o.status == Status::model_mismatch));
          CHECK(o.block == untouched);
        }
      }
    }
    CHECK(ignored == 0);
  }
}

TEST_CASE("codec, corrupt: header fields") {
  const Bytes blob = small_blob();
  auto patched32 = [&](size_t at, uint32_t v) {
    Bytes b = blob;
    put_u32(b, at, v);
    return b;
  };
  auto patched64 = [&](size_t at, uint64_t v) {
    Bytes b = blob;
    put_u64(b, at, v);
    return b;
  };
  SUBCASE("magic") { check_fails(patched32(0, 0x42564B51), Status::corrupt, "magic"); }
  SUBCASE("codec version") {
    check_fails(patched32(kVersion, 2), Status::corrupt, "version");
    check_fails(patched32(kVersion, 0), Status::corrupt, "version");
  }
  SUBCASE("flags") {
    check_fails(patched32(kFlags, 2), Status::corrupt, "flags");
    check_fails(patched32(kFlags, 0x80000001u), Status::corrupt, "flags");
    // The filter bit cleared on a filtered payload: decodes, but to the wrong bytes.
    check_fails(patched32(kFlags, 0), Status::corrupt, "checksum");
  }
  SUBCASE("unknown KV type") {
    check_fails(patched32(kType, 0), Status::corrupt, "KV type");
    check_fails(patched32(kType, 4), Status::corrupt, "KV type");
  }
  SUBCASE("n_tokens 0 or past the block") {
    check_fails(patched32(kTokens, 0), Status::corrupt);
    check_fails(patched32(kTokens, 17), Status::corrupt);
  }
  SUBCASE("a shape no int32 holds") {
    check_fails(patched32(kLayers, 0), Status::corrupt, "shape");
    check_fails(patched32(kHeadDim, 0x80000000u), Status::corrupt, "shape");
  }
  SUBCASE("raw_bytes other than the layout implies") {
    const uint64_t raw = get_u64(blob, kRaw);
    check_fails(patched64(kRaw, raw + 1), Status::corrupt, "raw_bytes");
    check_fails(patched64(kRaw, raw - 1), Status::corrupt, "raw_bytes");
    check_fails(patched64(kRaw, ~uint64_t(0)), Status::corrupt, "raw_bytes");
  }
  SUBCASE("compressed_bytes other than the bytes present") {
    const uint64_t c = get_u64(blob, kCompressed);
    check_fails(patched64(kCompressed, c + 1), Status::corrupt, "compressed");
    check_fails(patched64(kCompressed, c - 1), Status::corrupt, "compressed");
    Bytes trailing = blob;
    trailing.push_back(std::byte{0});
    check_fails(trailing, Status::corrupt, "compressed");
  }
  SUBCASE("checksum") {
    check_fails(patched64(kChecksum, get_u64(blob, kChecksum) ^ 1), Status::corrupt, "checksum");
  }
  SUBCASE("huge counts from a hostile header are refused before any allocation") {
    Bytes b = patched32(kLayers, 0x7fffffff);
    put_u32(b, kHeads, 0x7fffffff);
    put_u32(b, kHeadDim, 0x7fffffff);
    check_fails(b, Status::corrupt, "raw_bytes");
  }
}

TEST_CASE("codec, corrupt: another model or KV layout is a mismatch, not damage") {
  const Bytes blob = small_blob();
  auto status_of = [](const Outcome& o) { return o.status; };
  CHECK(status_of(decode(blob, kLayout, kFingerprint + 1)) == Status::model_mismatch);
  for (const BlockLayout& other :
       {BlockLayout(KvType::f16, kLayout.shape()), BlockLayout(KvType::f32, kLayout.shape()),
        BlockLayout(KvType::int8, KvShape{2, 1, 8}), BlockLayout(KvType::int8, KvShape{1, 2, 8}),
        BlockLayout(KvType::int8, KvShape{1, 1, 16})}) {
    const Outcome o = decode(blob, other);
    CHECK(o.status == Status::model_mismatch);
    CHECK(o.block == Bytes(other.block_bytes(), std::byte{0x77}));
  }
  // The same through header fields of a blob that is otherwise sound.
  Bytes b = blob;
  put_u32(b, kBlockTokensAt, 32);
  check_fails(b, Status::model_mismatch, "layout");
  b = blob;
  put_u64(b, kFingerprintAt, 7);
  check_fails(b, Status::model_mismatch, "another model");
  // A blob of another layout: its own raw_bytes is consistent, the layout is not ours.
  const BlockLayout f16(KvType::f16, kLayout.shape());
  const Bytes f16_block = test::sample_kv_block(f16, 1);
  const Bytes f16_blob = encode_kv_block(f16, kFingerprint, f16_block.data(), 3);
  check_fails(f16_blob, Status::model_mismatch, "KV type");
}

TEST_CASE("codec, corrupt: the frame must be one current-format zstd frame of the stated size") {
  const Bytes blob = small_blob(false);  // unfiltered: the frame holds the payload itself
  const Bytes frame = frame_of(blob);
  const Bytes payload = payload_of_source();
  REQUIRE(decode(with_frame(blob, zstd_frame(payload))).status == Status::ok);

  SUBCASE("legacy frame magics (v0.5 - v0.7) are refused, though libzstd reads them") {
    for (uint32_t magic : {0xFD2FB525u, 0xFD2FB526u, 0xFD2FB527u}) {
      Bytes f = frame;
      put_u32(f, 0, magic);
      check_fails(with_frame(blob, f), Status::corrupt, "legacy");
    }
  }
  SUBCASE("something else than a zstd frame") {
    Bytes f = frame;
    put_u32(f, 0, 0xFD2FB529u);
    check_fails(with_frame(blob, f), Status::corrupt, "zstd frame magic");
    check_fails(with_frame(blob, Bytes(3, std::byte{0x28})), Status::corrupt, "zstd frame");
    check_fails(with_frame(blob, Bytes{}), Status::corrupt, "zstd frame");
  }
  SUBCASE("two frames") {
    Bytes two = frame;
    two.insert(two.end(), frame.begin(), frame.end());
    check_fails(with_frame(blob, two), Status::corrupt, "frame ends");
  }
  SUBCASE("a skippable frame before or after the payload frame") {
    Bytes before = skippable_frame(16);
    before.insert(before.end(), frame.begin(), frame.end());
    check_fails(with_frame(blob, before), Status::corrupt, "skippable");
    Bytes after = frame;
    const Bytes skip = skippable_frame(0);
    after.insert(after.end(), skip.begin(), skip.end());
    check_fails(with_frame(blob, after), Status::corrupt, "frame ends");
  }
  SUBCASE("a frame without a content size") {
    check_fails(with_frame(blob, zstd_frame(payload, false)), Status::corrupt, "content size");
  }
  SUBCASE("a frame of another size than raw_bytes") {
    Bytes longer = payload;
    longer.push_back(std::byte{1});
    check_fails(with_frame(blob, zstd_frame(longer)), Status::corrupt, "holds");
    check_fails(with_frame(blob, zstd_frame(Bytes(payload.begin(), payload.end() - 1))),
                Status::corrupt, "holds");
  }
  SUBCASE("a truncated frame whose header still fits: zstd's own error is reported") {
    const Bytes cut(frame.begin(), frame.end() - 2);
    check_fails(with_frame(blob, cut), Status::corrupt, "zstd: ");
  }
  SUBCASE("a sound frame of other bytes fails the checksum") {
    Bytes other = payload;
    other[5] ^= std::byte{0x10};
    check_fails(with_frame(blob, zstd_frame(other)), Status::corrupt, "checksum");
  }
}

TEST_CASE("codec, corrupt: peek applies the header checks alone") {
  const Bytes blob = small_blob();
  CHECK(peek_kv_block(blob).n_tokens == kTokensInBlob);
  CHECK_THROWS_AS(peek_kv_block(Bytes(blob.begin(), blob.begin() + 67)), Error);
  Bytes other_model = blob;
  put_u64(other_model, kFingerprintAt, 1);
  CHECK(peek_kv_block(other_model).model_fingerprint == 1);  // no model to compare with
  Bytes bad = blob;
  put_u32(bad, kVersion, 9);
  try {
    peek_kv_block(bad);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::corrupt);
  }
}

// KV blob format, version 1. All integers little-endian; no padding, no ignored bytes.
//
//   offset size  field
//        0    4  magic "PKVB"
//        4    4  codec version (1)
//        8    4  flags: bit 0 = the payload was filtered (kv_filter.h); other bits are zero
//       12    4  KV type: 1 int8, 2 f16, 3 f32 (the PARLEY_KV_* values)
//       16    4  n_layers
//       20    4  n_kv_heads
//       24    4  head_dim
//       28    4  block_tokens (16)
//       32    4  n_tokens: filled slots stored, 1..block_tokens
//       36    8  model fingerprint
//       44    8  raw_bytes: payload bytes = n_tokens x KV bytes per token of the layout
//       52    8  compressed_bytes: size of the zstd frame, which ends the blob
//       60    8  checksum: xxh3-64 of the payload before filtering, so that a filter or
//                decompression bug is caught as well as a flipped bit
//       68       exactly one zstd frame (magic ZSTD_MAGICNUMBER, content size = raw_bytes)
//                holding the payload, filtered when flag bit 0 is set
//
// The payload (kv_filter.h) holds only slots [0, n_tokens): the unfilled tail of a block is
// garbage and costs no bytes. Decoding checks every field before it trusts it; nothing is
// allocated from a size the header states before that size was matched against the layout.
#include "store/kv_codec.h"

#include <cstring>
#include <string>

#include "common/error.h"
#include "common/hash.h"
#include "store/kv_filter.h"
#include "store/zstd_contexts.h"

namespace parley::store {
namespace {

constexpr char kMagic[4] = {'P', 'K', 'V', 'B'};
constexpr size_t kHeaderBytes = 68;
constexpr uint32_t kFlagFiltered = 1u;
constexpr uint32_t kKnownFlags = kFlagFiltered;
// Frame magics of zstd v0.5-v0.7, which Debian's libzstd still decodes; a v1 blob never
// holds one, so any of them means the bytes were not written by this codec.
constexpr uint32_t kLegacyMagicFirst = 0xFD2FB525u;
constexpr uint32_t kLegacyMagicLast = 0xFD2FB527u;
constexpr uint8_t kFrameDescriptorUnusedBit = 0x10;

void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte((v >> (8 * i)) & 0xffu);
}
void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::byte((v >> (8 * i)) & 0xffu);
}
uint32_t get_u32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint32_t(p[i]);
  return v;
}
uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(p[i]);
  return v;
}

[[noreturn]] void corrupt(const std::string& what) { fail(Status::corrupt, "KV blob: " + what); }

[[noreturn]] void mismatch(const std::string& what) {
  fail(Status::model_mismatch, "KV blob: " + what);
}

// Payload bytes of the header's shape, computed without trusting it: 0 when a product
// overflows (a real layout never gives 0).
uint64_t checked_payload_bytes(kv::KvType type, uint32_t n_layers, uint32_t n_kv_heads,
                               uint32_t head_dim, uint32_t n_tokens) {
  uint64_t heads = 0, values = 0, value_bytes = 0, scale_bytes = 0, per_token = 0, total = 0;
  if (__builtin_mul_overflow(uint64_t(2) * n_layers, uint64_t(n_kv_heads), &heads) ||
      __builtin_mul_overflow(heads, uint64_t(head_dim), &values) ||
      __builtin_mul_overflow(values, uint64_t(kv::kv_element_bytes(type)), &value_bytes)) {
    return 0;
  }
  if (type == kv::KvType::int8) scale_bytes = heads * sizeof(float);
  if (__builtin_add_overflow(value_bytes, scale_bytes, &per_token) ||
      __builtin_mul_overflow(per_token, uint64_t(n_tokens), &total)) {
    return 0;
  }
  return total;
}

bool known_kv_type(uint32_t t) {
  return t == uint32_t(kv::KvType::int8) || t == uint32_t(kv::KvType::f16) ||
         t == uint32_t(kv::KvType::f32);
}

bool fits_int32(uint32_t v) { return v >= 1 && v <= uint32_t(INT32_MAX); }

// Checks that the bytes after the header are exactly one current-format zstd frame whose
// stated content size is raw_bytes.
void check_frame(std::span<const std::byte> frame, uint64_t raw_bytes) {
  if (frame.size() < 4) corrupt("zstd frame of " + std::to_string(frame.size()) + " bytes");
  const uint32_t magic = get_u32(frame.data());
  if (magic != ZSTD_MAGICNUMBER) {
    if ((magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START) {
      corrupt("skippable zstd frame where the payload frame should be");
    }
    if (magic >= kLegacyMagicFirst && magic <= kLegacyMagicLast) {
      corrupt("legacy zstd frame (pre-v0.8 format) refused");
    }
    corrupt("no zstd frame magic after the header");
  }
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_UNKNOWN) corrupt("zstd frame without a content size");
  if (content == ZSTD_CONTENTSIZE_ERROR) corrupt("unreadable zstd frame header");
  // The frame header descriptor's unused bit: zstd ignores it and never sets it, so a set
  // bit could only be damage that would otherwise go unnoticed.
  if ((uint8_t(frame[4]) & kFrameDescriptorUnusedBit) != 0) corrupt("zstd frame header damaged");
  if (content != raw_bytes) {
    corrupt("zstd frame holds " + std::to_string(content) + " bytes, header says " +
            std::to_string(raw_bytes));
  }
  const size_t frame_bytes = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_bytes)) corrupt(zstd_error(frame_bytes));
  if (frame_bytes != frame.size()) {
    corrupt("zstd frame ends after " + std::to_string(frame_bytes) + " of " +
            std::to_string(frame.size()) + " bytes");
  }
}

// Scratch of at most one block's bytes each, kept per thread so that spilling and restoring
// many blocks does not allocate per block.
struct Scratch {
  std::vector<std::byte> payload;
  std::vector<std::byte> filtered;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

std::vector<std::byte> encode_kv_block(const kv::BlockLayout& layout, uint64_t model_fingerprint,
                                       const std::byte* block, uint32_t n_tokens,
                                       const KvCodecOptions& options) {
  require(n_tokens >= 1 && n_tokens <= kv::kBlockTokens, Status::invalid_argument, [&] {
    return "encode_kv_block: n_tokens must be 1.." + std::to_string(kv::kBlockTokens) +
           ", got " + std::to_string(n_tokens);
  });
  require(options.zstd_level >= ZSTD_minCLevel() && options.zstd_level <= ZSTD_maxCLevel(),
          Status::invalid_argument, [&] {
            return "encode_kv_block: zstd level " + std::to_string(options.zstd_level) +
                   " out of " + std::to_string(ZSTD_minCLevel()) + ".." +
                   std::to_string(ZSTD_maxCLevel());
          });
  const size_t raw_bytes = kv_payload_bytes(layout, n_tokens);
  Scratch& scratch = thread_scratch();
  scratch.payload.resize(raw_bytes);
  gather_kv_payload(layout, block, n_tokens, scratch.payload);
  const uint64_t checksum = hash64(scratch.payload.data(), raw_bytes);
  std::span<const std::byte> to_compress = scratch.payload;
  if (options.filter) {
    scratch.filtered.resize(raw_bytes);
    filter_kv_payload(layout, n_tokens, scratch.payload, scratch.filtered);
    to_compress = scratch.filtered;
  }

  std::vector<std::byte> blob(kHeaderBytes + ZSTD_compressBound(raw_bytes));
  const size_t frame_bytes = ZSTD_compressCCtx(
      thread_compression_context(), blob.data() + kHeaderBytes, blob.size() - kHeaderBytes,
      to_compress.data(), to_compress.size(), options.zstd_level);
  if (ZSTD_isError(frame_bytes)) {
    fail(zstd_out_of_memory(frame_bytes) ? Status::out_of_memory : Status::internal,
         "encode_kv_block: " + zstd_error(frame_bytes));
  }
  blob.resize(kHeaderBytes + frame_bytes);

  const kv::KvShape& shape = layout.shape();
  std::byte* h = blob.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  put_u32(h + 4, kKvCodecVersion);
  put_u32(h + 8, options.filter ? kFlagFiltered : 0u);
  put_u32(h + 12, uint32_t(layout.type()));
  put_u32(h + 16, uint32_t(shape.n_layers));
  put_u32(h + 20, uint32_t(shape.n_kv_heads));
  put_u32(h + 24, uint32_t(shape.head_dim));
  put_u32(h + 28, kv::kBlockTokens);
  put_u32(h + 32, n_tokens);
  put_u64(h + 36, model_fingerprint);
  put_u64(h + 44, raw_bytes);
  put_u64(h + 52, frame_bytes);
  put_u64(h + 60, checksum);
  return blob;
}

KvBlobInfo peek_kv_block(std::span<const std::byte> blob) {
  if (blob.size() < kHeaderBytes) {
    corrupt(std::to_string(blob.size()) + " bytes, shorter than its " +
            std::to_string(kHeaderBytes) + "-byte header");
  }
  const std::byte* h = blob.data();
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) corrupt("bad magic (not a KV blob)");
  KvBlobInfo info;
  info.codec_version = get_u32(h + 4);
  if (info.codec_version != kKvCodecVersion) {
    corrupt("unknown codec version " + std::to_string(info.codec_version));
  }
  const uint32_t flags = get_u32(h + 8);
  if ((flags & ~kKnownFlags) != 0) corrupt("unknown flags " + std::to_string(flags));
  info.filtered = (flags & kFlagFiltered) != 0;
  const uint32_t type = get_u32(h + 12);
  if (!known_kv_type(type)) corrupt("unknown KV type " + std::to_string(type));
  info.type = kv::KvType(int32_t(type));
  const uint32_t n_layers = get_u32(h + 16), n_kv_heads = get_u32(h + 20),
                 head_dim = get_u32(h + 24);
  if (!fits_int32(n_layers) || !fits_int32(n_kv_heads) || !fits_int32(head_dim)) {
    corrupt("bad KV shape " + std::to_string(n_layers) + "x" + std::to_string(n_kv_heads) +
            "x" + std::to_string(head_dim));
  }
  info.shape = kv::KvShape{int32_t(n_layers), int32_t(n_kv_heads), int32_t(head_dim)};
  info.block_tokens = get_u32(h + 28);
  info.n_tokens = get_u32(h + 32);
  if (info.block_tokens == 0 || info.n_tokens == 0 || info.n_tokens > info.block_tokens) {
    corrupt(std::to_string(info.n_tokens) + " tokens in a block of " +
            std::to_string(info.block_tokens));
  }
  info.model_fingerprint = get_u64(h + 36);
  info.raw_bytes = get_u64(h + 44);
  info.compressed_bytes = get_u64(h + 52);
  info.checksum = get_u64(h + 60);
  const uint64_t implied =
      checked_payload_bytes(info.type, n_layers, n_kv_heads, head_dim, info.n_tokens);
  if (implied == 0 || info.raw_bytes != implied) {
    corrupt("raw_bytes " + std::to_string(info.raw_bytes) + " does not match " +
            std::to_string(info.n_tokens) + " tokens of its layout");
  }
  if (info.compressed_bytes != blob.size() - kHeaderBytes) {
    corrupt("header says " + std::to_string(info.compressed_bytes) + " compressed bytes, " +
            std::to_string(blob.size() - kHeaderBytes) + " follow it");
  }
  return info;
}

KvBlobInfo decode_kv_block(std::span<const std::byte> blob, const kv::BlockLayout& layout,
                           uint64_t model_fingerprint, std::byte* block) {
  const KvBlobInfo info = peek_kv_block(blob);
  if (info.type != layout.type()) {
    mismatch(std::string("KV type ") + kv::kv_type_name(info.type) + ", expected " +
             kv::kv_type_name(layout.type()));
  }
  if (!(info.shape == layout.shape()) || info.block_tokens != kv::kBlockTokens) {
    mismatch("layout does not match this model's KV layout");
  }
  if (info.model_fingerprint != model_fingerprint) mismatch("made for another model");
  // Matched against the caller's layout: from here on raw_bytes is at most one block.
  const size_t raw_bytes = kv_payload_bytes(layout, info.n_tokens);
  if (info.raw_bytes != raw_bytes) corrupt("raw_bytes does not match the layout");

  const std::span<const std::byte> frame = blob.subspan(kHeaderBytes);
  check_frame(frame, raw_bytes);
  Scratch& scratch = thread_scratch();
  std::vector<std::byte>& decompressed = info.filtered ? scratch.filtered : scratch.payload;
  decompressed.resize(raw_bytes);
  const size_t got = ZSTD_decompressDCtx(thread_decompression_context(), decompressed.data(),
                                         raw_bytes, frame.data(), frame.size());
  if (zstd_out_of_memory(got)) fail(Status::out_of_memory, "decode_kv_block: " + zstd_error(got));
  if (ZSTD_isError(got)) corrupt(zstd_error(got));
  if (got != raw_bytes) corrupt("zstd frame decoded to " + std::to_string(got) + " bytes");
  if (info.filtered) {
    scratch.payload.resize(raw_bytes);
    unfilter_kv_payload(layout, info.n_tokens, scratch.filtered, scratch.payload);
  }
  if (hash64(scratch.payload.data(), raw_bytes) != info.checksum) corrupt("checksum mismatch");
  scatter_kv_payload(layout, scratch.payload, info.n_tokens, block);
  return info;
}

}  // namespace parley::store

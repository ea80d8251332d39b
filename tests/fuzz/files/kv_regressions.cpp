// Hand-built bad KV blobs, one per bug class of KV restore: counts and sizes that overflow,
// legacy and skippable zstd frames, frames of the wrong size or count, size mismatches, and
// blobs of another model or layout. The codec refuses each (CORRUPT or MODEL_MISMATCH); a
// session whose stored KV is one of them recomputes it (kv_source REBUILT).
#include <zstd.h>

#include <limits>

#include "files/fuzz_files.h"
#include "files/tiny_gguf.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"

namespace parley::test {
namespace {

constexpr size_t kHeader = 68;
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

std::string valid_blob(uint32_t n_tokens = 5, bool filter = true) {
  const kv::BlockLayout layout(kRegressionKvType, kRegressionKvShape);
  const auto block = sample_kv_block(layout, 7);
  const auto blob = store::encode_kv_block(layout, kRegressionFingerprint, block.data(), n_tokens,
                                           {1, filter});
  return {reinterpret_cast<const char*>(blob.data()), blob.size()};
}

std::string with_u32(size_t at, uint32_t v) {
  std::string b = valid_blob();
  put_u32_at(b, at, v);
  return b;
}

std::string with_u64(size_t at, uint64_t v) {
  std::string b = valid_blob();
  put_u64_at(b, at, v);
  return b;
}

// The valid blob with its frame replaced; the header's compressed size follows.
std::string with_frame(const std::string& frame) {
  std::string b = valid_blob().substr(0, kHeader) + frame;
  put_u64_at(b, 52, frame.size());
  return b;
}

std::string frame_of(const std::string& blob) { return blob.substr(kHeader); }

// The same payload in a frame that does not state its content size.
std::string frame_without_content_size() {
  const std::string blob = valid_blob();
  std::string payload(ZSTD_getFrameContentSize(blob.data() + kHeader, blob.size() - kHeader), '\0');
  ZSTD_decompress(payload.data(), payload.size(), blob.data() + kHeader, blob.size() - kHeader);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  std::string out(ZSTD_compressBound(payload.size()), '\0');
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  ZSTD_inBuffer i{payload.data(), payload.size(), 0};
  ZSTD_compressStream2(cctx, &o, &i, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  out.resize(o.pos);
  return out;
}

struct Cases {
  std::vector<FuzzFile> files;
  void add(const std::string& name, std::string bytes, const char* field, const char* bug,
           const char* status = "CORRUPT") {
    files.push_back({"kv/" + name + ".pkvb", std::move(bytes), status, "REBUILT", field, bug});
  }
};

}  // namespace

std::vector<FuzzFile> kv_regressions() {
  Cases c;
  const std::string blob = valid_blob();
  c.add("empty", "", "shorter than its 68-byte header", "zero-length blob");
  c.add("header-only", blob.substr(0, kHeader), "zstd frame of 0 bytes",
        "header with no frame (compressed size patched to 0)");
  put_u64_at(c.files.back().bytes, 52, 0);
  c.add("truncated-header", blob.substr(0, 40), "shorter than its 68-byte header",
        "blob cut inside the header");
  c.add("bad-magic", with_u32(0, 0x42564b50u ^ 0x20u), "bad magic", "not a KV blob");
  c.add("version-2", with_u32(4, 2), "unknown codec version 2", "codec version from the future");
  c.add("unknown-flags", with_u32(8, 0x80000001u), "unknown flags", "flag bits this codec never sets");
  c.add("unknown-kv-type", with_u32(12, 9), "unknown KV type 9", "KV type id past the last one");
  c.add("layers-zero", with_u32(16, 0), "bad KV shape", "zero layers");
  c.add("head-dim-past-int32", with_u32(24, 0x80000000u), "bad KV shape",
        "head_dim past int32 (negative when cast)");
  {
    std::string b = blob;
    put_u32_at(b, 16, 0x7fffffffu);
    put_u32_at(b, 20, 0x7fffffffu);
    put_u32_at(b, 24, 0x7fffffffu);
    c.add("shape-product-overflow", b, "does not match",
          "layers x heads x head_dim x tokens wraps 64 bits");
  }
  c.add("tokens-zero", with_u32(32, 0), "0 tokens in a block of 16", "zero filled slots");
  c.add("tokens-past-block", with_u32(32, 17), "17 tokens in a block of 16",
        "more filled slots than the block has");
  c.add("tokens-overflow", with_u32(32, 0xffffffffu), "tokens in a block of 16",
        "slot count 2^32-1");
  c.add("raw-bytes-overflow", with_u64(44, kU64Max), "raw_bytes 18446744073709551615",
        "payload size 2^64-1 (allocation by a header size)");
  c.add("raw-bytes-mismatch", with_u64(44, 4096), "raw_bytes 4096", "payload size off the layout");
  c.add("compressed-bytes-overflow", with_u64(52, kU64Max), "compressed bytes",
        "frame size 2^64-1");
  {
    std::string b = blob + std::string(9, '\0');
    c.add("trailing-bytes", b, "compressed bytes", "bytes after the frame (size mismatch)");
  }
  {
    std::string b = blob.substr(0, blob.size() - 7);
    put_u64_at(b, 52, b.size() - kHeader);
    c.add("frame-truncated", b, "zstd", "frame cut short, sizes patched to agree");
  }
  {
    std::string frame = frame_of(blob);
    frame[0] = char(0x27);  // 0xFD2FB527, zstd v0.7
    c.add("legacy-frame-v07", with_frame(frame), "legacy zstd frame",
          "zstd v0.7 frame, which libzstd still decodes (legacy decoder attack surface)");
    frame[0] = char(0x25);  // v0.5
    c.add("legacy-frame-v05", with_frame(frame), "legacy zstd frame", "zstd v0.5 frame");
  }
  {
    std::string frame = "\x50\x2A\x4D\x18";  // skippable frame magic 0x184D2A50
    frame += std::string("\x04\x00\x00\x00", 4) + "skip";
    c.add("skippable-frame", with_frame(frame), "skippable", "skippable frame instead of data");
  }
  c.add("frame-without-size", with_frame(frame_without_content_size()),
        "without a content size", "frame that does not state its size (unbounded output)");
  {
    std::string b = valid_blob(6);
    c.add("content-size-mismatch", with_frame(frame_of(b)), "zstd frame holds",
          "frame of 6 tokens under a header of 5");
  }
  {
    const std::string frame = frame_of(blob);
    c.add("two-frames", with_frame(frame + frame), "zstd frame ends after",
          "a second frame after the first");
  }
  {
    std::string frame = frame_of(blob);
    frame[4] = char(uint8_t(frame[4]) | 0x10);
    c.add("frame-unused-bit", with_frame(frame), "zstd frame header damaged",
          "reserved frame header bit set");
  }
  {
    std::string b = blob;
    b[60] = char(b[60] ^ 1);
    c.add("checksum-mismatch", b, "checksum mismatch", "payload intact, checksum wrong");
  }
  c.add("other-model", with_u64(36, kRegressionFingerprint ^ 1), "made for another model",
        "fingerprint of another model", "MODEL_MISMATCH");
  c.add("other-kv-type", [] {
          const kv::BlockLayout f16(kv::KvType::f16, kRegressionKvShape);
          const auto block = sample_kv_block(f16, 3);
          const auto b = store::encode_kv_block(f16, kRegressionFingerprint, block.data(), 4);
          return std::string(reinterpret_cast<const char*>(b.data()), b.size());
        }(),
        "KV type f16", "KV type of another engine setting", "MODEL_MISMATCH");
  c.add("other-layout", [] {
          const kv::BlockLayout other(kRegressionKvType, kv::KvShape{3, 2, 8});
          const auto block = sample_kv_block(other, 3);
          const auto b = store::encode_kv_block(other, kRegressionFingerprint, block.data(), 4);
          return std::string(reinterpret_cast<const char*>(b.data()), b.size());
        }(),
        "layout does not match", "layout of another model shape", "MODEL_MISMATCH");
  c.add("partial-block-as-full", valid_blob(5), "tokens where a full block",
        "a valid blob of 5 tokens stored as a full block (slots 5-15 left unset)", "OK");
  c.add("block-tokens-32", with_u32(28, 32), "layout does not match",
        "block size other than 16", "MODEL_MISMATCH");
  return c.files;
}

}  // namespace parley::test

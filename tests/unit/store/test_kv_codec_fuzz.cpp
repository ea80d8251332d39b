// Runs the KV codec's fuzz entry point over its seed corpus and over 100k deterministic
// mutations of it: every input must end in a clean error or a consistent decode, never in a
// crash (CI runs this under ASan and UBSan). The entry point is compiled right here, so the
// store suite needs no extra target.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "fuzz/fuzz_kv_codec.cpp"

using parley::test::kv_codec_seed_corpus;

namespace {

using Input = std::vector<uint8_t>;

// Values that sit on the codec's boundaries: counts, sizes and frame magics.
constexpr uint32_t kInteresting32[] = {0,          1,          2,          3,          15,
                                       16,         17,         0x7fffffff, 0x80000000u,
                                       0xffffffffu, 0xFD2FB528u, 0xFD2FB527u, 0x184D2A50u};

void put_u32(Input& in, size_t at, uint32_t v) {
  for (size_t i = 0; i < 4 && at + i < in.size(); ++i) in[at + i] = uint8_t(v >> (8 * i));
}

// One to four random edits: bit flips, byte writes, 32-bit boundary values, inserts,
// deletions, truncation, duplicated runs and splices with another seed.
Input mutate(const std::vector<Input>& corpus, std::mt19937_64& rng) {
  Input in = corpus[rng() % corpus.size()];
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = in.empty() ? 0 : rng() % in.size();
    switch (rng() % 8) {
      case 0:
        if (!in.empty()) in[at] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:
        if (!in.empty()) in[at] = uint8_t(rng());
        break;
      case 2:
        put_u32(in, at & ~size_t(3), kInteresting32[rng() % std::size(kInteresting32)]);
        break;
      case 3:
        in.insert(in.begin() + std::ptrdiff_t(at), uint8_t(rng()));
        break;
      case 4:
        if (!in.empty()) in.erase(in.begin() + std::ptrdiff_t(at));
        break;
      case 5:
        in.resize(at);
        break;
      case 6: {
        const size_t len = std::min<size_t>(in.size() - at, 1 + rng() % 32);
        const Input run(in.begin() + std::ptrdiff_t(at), in.begin() + std::ptrdiff_t(at + len));
        in.insert(in.begin() + std::ptrdiff_t(rng() % (in.size() + 1)), run.begin(), run.end());
        break;
      }
      default: {
        const Input& other = corpus[rng() % corpus.size()];
        const size_t from = other.empty() ? 0 : rng() % other.size();
        in.resize(at);
        in.insert(in.end(), other.begin() + std::ptrdiff_t(from), other.end());
        break;
      }
    }
  }
  return in;
}

}  // namespace

TEST_CASE("codec fuzz: the seed corpus holds valid blobs and runs clean") {
  const auto corpus = kv_codec_seed_corpus();
  REQUIRE(corpus.size() >= 8);
  size_t valid = 0;
  for (const Input& in : corpus) {
    CHECK(LLVMFuzzerTestOneInput(in.data(), in.size()) == 0);
    try {
      parley::store::peek_kv_block({reinterpret_cast<const std::byte*>(in.data()), in.size()});
      ++valid;
    } catch (const parley::Error&) {
    }
  }
  CHECK(valid >= 8);
  // For a coverage-guided run: the same seeds as files.
  if (const char* dir = std::getenv("PARLEY_FUZZ_CORPUS_DIR")) {
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < corpus.size(); ++i) {
      std::ofstream f(std::filesystem::path(dir) / ("seed-" + std::to_string(i)),
                      std::ios::binary);
      f.write(reinterpret_cast<const char*>(corpus[i].data()), std::streamsize(corpus[i].size()));
    }
    MESSAGE("wrote " << corpus.size() << " seeds to " << std::string(dir));
  }
}

TEST_CASE("codec fuzz: 100k mutations of the seeds never crash") {
  const auto corpus = kv_codec_seed_corpus();
  std::mt19937_64 rng(0x6b76636f646563ull);
  size_t header_ok = 0, decoded = 0;
  for (int i = 0; i < 100000; ++i) {
    const Input in = mutate(corpus, rng);
    LLVMFuzzerTestOneInput(in.data(), in.size());
    const std::span<const std::byte> blob(reinterpret_cast<const std::byte*>(in.data()), in.size());
    try {
      const auto info = parley::store::peek_kv_block(blob);
      ++header_ok;
      if (info.raw_bytes / info.n_tokens > 65536) continue;  // a shape too big to build
      const parley::kv::BlockLayout layout(info.type, info.shape);
      std::vector<std::byte> block(layout.block_bytes());
      parley::store::decode_kv_block(blob, layout, info.model_fingerprint, block.data());
      ++decoded;
    } catch (const parley::Error&) {
    }
  }
  MESSAGE(header_ok << " of 100000 mutations passed the header checks, " << decoded
                    << " decoded");
  // The mutations must reach past the header often, or the payload code goes untested.
  CHECK(header_ok > 10000);
}

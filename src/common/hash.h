// 64-bit content hashes (xxh3) for fingerprints, block hashes and checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace parley {

inline uint64_t hash64(const void* data, size_t n, uint64_t seed = 0) {
  return XXH3_64bits_withSeed(data, n, seed);
}

inline uint64_t hash64(std::string_view s, uint64_t seed = 0) {
  return hash64(s.data(), s.size(), seed);
}

// Incremental form for hashing many pieces.
class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0) { XXH3_64bits_reset_withSeed(&state_, seed); }
  Hasher& add(const void* data, size_t n) {
    XXH3_64bits_update(&state_, data, n);
    return *this;
  }
  template <typename T>
  Hasher& add_value(const T& v) {
    return add(&v, sizeof v);
  }
  Hasher& add(std::string_view s) {
    add_value(uint64_t(s.size()));
    return add(s.data(), s.size());
  }
  uint64_t digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_{};  // zeroed: the seeded reset reads fields before it sets them
};

}  // namespace parley

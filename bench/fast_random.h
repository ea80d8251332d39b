// A small, fast, deterministic generator for synthetic weights: billions of values must take
// seconds, which rules out std::normal_distribution.
#pragma once

#include <cstdint>

namespace parley::bench {

// SplitMix64: turns (seed, stream index) into well-mixed starting states.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// xorshift64*: one multiply and three shifts per 64 random bits.
class Xorshift64 {
 public:
  explicit Xorshift64(uint64_t seed) : state_(splitmix64(seed) | 1u) {}
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1dull;
  }

 private:
  uint64_t state_;
};

}  // namespace parley::bench

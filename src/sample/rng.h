// Seeded generator: xoshiro256** seeded by splitmix64 (both by Vigna, prng.di.unimi.it).
// Every operation is exact 64-bit integer arithmetic, so a seed gives the same stream on every
// platform and compiler; std::*_distribution is avoided on purpose (its output is
// implementation-defined).
#pragma once

#include <array>
#include <cstdint>

namespace parley::sample {

// One step of splitmix64: advances `state` and returns the next output.
inline uint64_t splitmix64_next(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // Four splitmix64 outputs fill the state; they are never all zero (splitmix64 is a
  // bijection of its counter), which xoshiro requires. Any seed, 0 included, is valid.
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) word = splitmix64_next(seed);
  }

  // A generator with the raw xoshiro256** state (not all zero): lets tests check the
  // published reference vectors of the core without the seeding step.
  static Rng from_state(const std::array<uint64_t, 4>& state) {
    Rng rng(0);
    rng.state_ = state;
    return rng;
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1): the top 53 bits (a double's precision) scaled by 2^-53, so every
  // value is exact and 1.0 is never returned.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::array<uint64_t, 4> state_{};
};

}  // namespace parley::sample

// Seeded, splittable random source: the same seed gives the same streams on every machine.
#pragma once

#include <cstdint>

namespace tlbsim::sim {

// SplitMix64's output function: a bijection on 64-bit integers with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// SplitMix64 generator. Contract: split(key) yields a stream that depends only on this
// stream's seed and the key, so adding a consumer never perturbs the others.
class Rng {
 public:
  constexpr explicit Rng(std::uint64_t seed) : seed_(seed), state_(seed) {}

  constexpr std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform integer in [0, bound). Contract: bound > 0. Uses Lemire's multiply-shift (tiny bias, deterministic).
  std::uint64_t below(std::uint64_t bound) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

  // Uniform double in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  constexpr Rng split(std::uint64_t key) const { return Rng(mix64(seed_ ^ mix64(key + 0x632be59bd9b4e019ULL))); }
  constexpr std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
  std::uint64_t state_;
};

}  // namespace tlbsim::sim

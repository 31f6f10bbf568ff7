#pragma once
// Counter-based random numbers: every value is a pure function of (root seed, stream tag, index),
// so materialization is order-free, parallelizable and bit-identical on every machine and build.
// Only integer ops and exact double ops are used (no libm), so no platform's log/cos can differ.
//
// Example:
//   moefuzz::Stream s(recipe.seed, "hidden");     // per-tensor sub-seed
//   double u = s.uniform(42);                     // in [0, 1), 53 random bits
//   double g = s.normal(42);                      // approx N(0,1) (Irwin-Hall of 12 uniforms)
#include <cstdint>
#include <string_view>

namespace moefuzz {

// SplitMix64's increment (the golden ratio in 64 bits) and its finalizer's two multipliers, named
// for the vector copies of mix64 (core/nvfp4_weight_draw.cpp) that must match it bit for bit.
inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kSplitMixMul1 = 0xBF58476D1CE4E5B9ull;
inline constexpr uint64_t kSplitMixMul2 = 0x94D049BB133111EBull;

// SplitMix64 finalizer: a bijective 64-bit mixer.
constexpr uint64_t mix64(uint64_t z) {
  z += kSplitMixGamma;
  z = (z ^ (z >> 30)) * kSplitMixMul1;
  z = (z ^ (z >> 27)) * kSplitMixMul2;
  return z ^ (z >> 31);
}
// FNV-1a of the tag, mixed with the root seed.
constexpr uint64_t derive_seed(uint64_t root, std::string_view tag) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : tag) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return mix64(root ^ mix64(h));
}

class Stream {
 public:
  Stream(uint64_t root_seed, std::string_view tag) : key_(derive_seed(root_seed, tag)) {}
  explicit Stream(uint64_t key) : key_(key) {}
  uint64_t bits(uint64_t index) const { return mix64(key_ ^ mix64(index * 0xD1B54A32D192ED03ull + 1)); }
  double uniform(uint64_t index) const { return static_cast<double>(bits(index) >> 11) * 0x1p-53; }
  // Uniform integer in [lo, hi] (inclusive); lo <= hi.
  int64_t uniform_int(uint64_t index, int64_t lo, int64_t hi) const {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return span == 0 ? static_cast<int64_t>(bits(index)) : lo + static_cast<int64_t>(bits(index) % span);
  }
  // Approximately standard normal: sum of 12 uniforms minus 6 (exact in double, bounded by +-6).
  double normal(uint64_t index) const {
    double s = 0;
    for (uint64_t j = 0; j < 12; ++j) s += Stream(key_ ^ (j + 1) * 0xA24BAED4963EE407ull).uniform(index);
    return s - 6.0;
  }
  // Bulk bits for the largest tensors (weight matrices): SplitMix64 at position `index` of the stream,
  // one mixing round instead of bits()' two, with the same counter-based determinism.
  uint64_t bulk_bits(uint64_t index) const { return mix64(key_ + index * kSplitMixGamma); }
  Stream child(std::string_view tag) const { return Stream(key_, tag); }
  uint64_t key() const { return key_; }

 private:
  uint64_t key_;
};

}  // namespace moefuzz

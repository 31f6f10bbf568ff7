#pragma once
// WordHash: a word-at-a-time 64-bit hash with four independent lanes over byte ranges. Fast (eight
// bytes per step per lane, ~6x cheaper than byte-wise FNV-1a); not cryptographic. Used where a change
// of any byte must change the value with overwhelming probability: the CANARY input check
// (kernels/canary.h) and, with two seeds for 128 bits, the content keys under which a kernel worker
// caches tensors it has already received (kernels/python_kernel.h).
//
// Example:
//   moefuzz::WordHash h;             // or WordHash(seed) for an independent second hash
//   h.add(c.hidden); h.add(c.logits);
//   uint64_t key = h.value();
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace moefuzz {

struct WordHash {
  uint64_t lane[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                      0x27D4EB2F165667C5ull};
  WordHash() = default;
  explicit WordHash(uint64_t seed) {
    for (uint64_t& l : lane) l = mix(l, seed);
  }
  static uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 27) | (h >> 37);
    return h * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
  }
  void add_bytes(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32)
      for (int l = 0; l < 4; ++l) {
        uint64_t w;
        std::memcpy(&w, p + i + 8 * l, 8);
        lane[l] = mix(lane[l], w);
      }
    for (; i < bytes; i += 8) {  // the tail, one zero-padded word at a time
      uint64_t w = 0;
      std::memcpy(&w, p + i, bytes - i < 8 ? bytes - i : 8);
      lane[0] = mix(lane[0], w);
    }
    lane[1] = mix(lane[1], bytes);
  }
  template <class T>
  void add(const std::vector<T>& v) {
    add_bytes(v.data(), v.size() * sizeof(T));
  }
  uint64_t value() const { return mix(mix(lane[0], lane[1]), mix(lane[2], lane[3])); }
};

}  // namespace moefuzz

#pragma once
// ContentHasher: a 128-bit content hash (XXH3 from xxHash, Debian libxxhash-dev, inlined) over a
// sequence of byte ranges. Each add() appends the range's length too, so ([a, b], []) and ([a], [b])
// differ. Not cryptographic; used where a change of any byte must change the value with overwhelming
// probability: the CANARY input check (kernels/canary.h, 64 bits), the content keys under which a
// Python kernel worker caches tensors (kernels/python_kernel.h) and the oracle's row memo keys
// (oracles/row_memo.h, 128 bits each). XXH3 reads ~10x faster than a scalar word-at-a-time hash,
// which matters here: a check hashes its cases' weights several times per kernel run.
//
// Example:
//   moefuzz::ContentHasher h;       // or ContentHasher(seed)
//   h.add(c.hidden); h.add(c.logits);
//   uint64_t key = h.value();       // or h.value128()
#include <cstddef>
#include <cstdint>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace moefuzz {

struct Hash128 {
  uint64_t low = 0, high = 0;
  bool operator==(const Hash128&) const = default;
};

class ContentHasher {
 public:
  ContentHasher() { XXH3_128bits_reset(&state_); }
  explicit ContentHasher(uint64_t seed) { XXH3_128bits_reset_withSeed(&state_, seed); }
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  void add_bytes(const void* data, size_t bytes) {
    if (bytes > 0) XXH3_128bits_update(&state_, data, bytes);
    const uint64_t length = bytes;
    XXH3_128bits_update(&state_, &length, sizeof length);
  }
  template <class T>
  void add(const std::vector<T>& v) {
    add_bytes(v.data(), v.size() * sizeof(T));
  }
  Hash128 value128() const {
    const XXH128_hash_t h = XXH3_128bits_digest(&state_);
    return {h.low64, h.high64};
  }
  uint64_t value() const { return value128().low; }

 private:
  XXH3_state_t state_{};  // zeroed: XXH3_*_reset reads fields GCC cannot see set (a warning otherwise)
};

}  // namespace moefuzz

#include "kernels/canary.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace moefuzz {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Word-at-a-time hash with four independent lanes (a byte-wise FNV cost ~6% of every check): the
// fingerprint only has to notice that a kernel wrote its inputs, so any change of any byte must (with
// overwhelming probability) change it; it is not a content address.
struct WordHash {
  uint64_t lane[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                      0x27D4EB2F165667C5ull};
  static uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 27) | (h >> 37);
    return h * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
  }
  template <class T>
  void add(const std::vector<T>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    const size_t bytes = v.size() * sizeof(T);
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
  uint64_t value() const { return mix(mix(lane[0], lane[1]), mix(lane[2], lane[3])); }
};

}  // namespace

uint64_t case_fingerprint(const Case& c) {
  WordHash f;
  f.add(c.hidden);
  f.add(c.logits);
  f.add(c.bias);
  f.add(c.token_ids);
  f.add(c.hash_table);
  f.add(c.a1_scale);
  f.add(c.a2_scale);
  for (const ExpertWeights& e : c.experts)
    for (const Nvfp4Matrix* m : {&e.gate, &e.up, &e.down}) {
      f.add(m->packed);
      f.add(m->scales);
      f.add(std::vector<float>{m->global_dequant});
    }
  return f.value();
}

std::string CanaryReport::summary() const {
  if (clean()) return guarded ? "clean" : "clean (unguarded: kernel ignores RunOptions::output_data)";
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  if (band_before_written) add(std::to_string(band_before_written) + " stores before the output");
  if (band_after_written)
    add(std::to_string(band_after_written) + " stores past the output end (first at +" +
        std::to_string(first_after_written) + ")");
  if (unwritten)
    add(std::to_string(unwritten) + " output elements hold the poison (first at " +
        std::to_string(first_unwritten) + ")");
  if (input_modified) add("input tensors modified");
  return s;
}

GuardedRun run_guarded(const Kernel& kernel, const Case& c, const RunOptions& opts) {
  const int64_t n = c.recipe.shape.tokens * c.recipe.shape.hidden;
  const int64_t band = kCanaryBandFloats;
  const float poison = float_of(opts.poison_bits), sentinel = float_of(kCanaryBandBits);
  std::vector<float> arena(static_cast<size_t>(band + n + band), sentinel);
  std::fill(arena.begin() + band, arena.begin() + band + n, poison);
  GuardedRun g;
  g.result.output.assign(static_cast<size_t>(n), poison);
  RunOptions guarded_opts = opts;
  guarded_opts.output_data = arena.data() + band;
  guarded_opts.output_slack = band;
  const uint64_t before = case_fingerprint(c);
  kernel.run_layer(c, guarded_opts, g.result);
  g.canary.input_modified = case_fingerprint(c) != before;
  for (int64_t i = 0; i < band; ++i) {
    if (bits_of(arena[i]) != kCanaryBandBits) ++g.canary.band_before_written;
    if (bits_of(arena[band + n + i]) != kCanaryBandBits) {
      if (g.canary.first_after_written < 0) g.canary.first_after_written = i;
      ++g.canary.band_after_written;
    }
  }
  // Which buffer did the kernel write? A guarded kernel leaves result.output all-poison.
  bool wrote_arena = g.canary.band_before_written || g.canary.band_after_written;
  for (int64_t i = 0; i < n && !wrote_arena; ++i) wrote_arena = bits_of(arena[band + i]) != opts.poison_bits;
  g.canary.guarded = wrote_arena;
  if (wrote_arena) std::copy(arena.begin() + band, arena.begin() + band + n, g.result.output.begin());
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(g.result.output.size()); ++i)
    if (bits_of(g.result.output[i]) == opts.poison_bits) {
      if (g.canary.first_unwritten < 0) g.canary.first_unwritten = i;
      ++g.canary.unwritten;
    }
  return g;
}

}  // namespace moefuzz

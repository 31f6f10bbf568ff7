#include "kernels/canary.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/content_hasher.h"
#include "core/cpu_features.h"
#include "core/expert_fingerprint.h"
#include "core/phase_clock.h"

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

// How many of x[0, n) hold the poison bits (every run scans its output, and the arena of a kernel that
// writes its own vector, whole): eight at a time where the CPU has AVX2.
int64_t poison_count_scalar(const float* x, int64_t begin, int64_t n, uint32_t poison) {
  int64_t count = 0;
  for (int64_t i = begin; i < n; ++i) count += bits_of(x[i]) == poison ? 1 : 0;
  return count;
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) int64_t poison_count_avx2(const float* x, int64_t n, uint32_t poison) {
  const __m256i p = _mm256_set1_epi32(static_cast<int>(poison));
  int64_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    count += __builtin_popcount(
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, p)))));
  }
  return count + poison_count_scalar(x, i, n, poison);
}
#endif
int64_t poison_count(const float* x, int64_t n, uint32_t poison) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) return poison_count_avx2(x, n, poison);
#endif
  return poison_count_scalar(x, 0, n, poison);
}
// Whether x[0, n) all hold the poison, in blocks of poison_count (a kernel that writes the arena
// is told apart in its first block).
bool all_poison(const float* x, int64_t n, uint32_t poison) {
  constexpr int64_t kBlock = 1024;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = std::min(kBlock, n - i);
    if (poison_count(x + i, len, poison) != len) return false;
  }
  return true;
}

}  // namespace

uint64_t case_fingerprint(const Case& c, ExpertBytes experts) {
  ContentHasher f;
  f.add(c.hidden);
  f.add(c.logits);
  f.add(c.bias);
  f.add(c.token_ids);
  f.add(c.hash_table);
  f.add(c.a1_scale);
  f.add(c.a2_scale);
  for (size_t e = 0; e < c.experts.size(); ++e) {
    const Hash128 h = experts == ExpertBytes::kRemembered ? expert_content_hash(c.experts, e)
                                                          : expert_content_hash_now(c.experts[e]);
    f.add_bytes(&h, sizeof h);
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

GuardedRun run_guarded(const Kernel& kernel, const Case& c, const RunOptions& opts,
                       std::optional<uint64_t> fingerprint, bool check_input) {
  const PhaseTimer timer(Phase::kKernel);
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
  const uint64_t before = !check_input ? 0 : fingerprint ? *fingerprint : case_fingerprint(c);
  kernel.run_layer(c, guarded_opts, g.result);
  g.canary.input_modified = check_input && case_fingerprint(c) != before;
  for (int64_t i = 0; i < band; ++i) {
    if (bits_of(arena[i]) != kCanaryBandBits) ++g.canary.band_before_written;
    if (bits_of(arena[band + n + i]) != kCanaryBandBits) {
      if (g.canary.first_after_written < 0) g.canary.first_after_written = i;
      ++g.canary.band_after_written;
    }
  }
  // Which buffer did the kernel write? A guarded kernel leaves result.output all-poison.
  const bool wrote_arena = g.canary.band_before_written || g.canary.band_after_written ||
                           !all_poison(&arena[static_cast<size_t>(band)], n, opts.poison_bits);
  g.canary.guarded = wrote_arena;
  if (wrote_arena) std::copy(arena.begin() + band, arena.begin() + band + n, g.result.output.begin());
  const int64_t m = std::min<int64_t>(n, static_cast<int64_t>(g.result.output.size()));
  g.canary.unwritten = poison_count(g.result.output.data(), m, opts.poison_bits);
  if (g.canary.unwritten > 0)
    for (int64_t i = 0; i < m && g.canary.first_unwritten < 0; ++i)
      if (bits_of(g.result.output[static_cast<size_t>(i)]) == opts.poison_bits) g.canary.first_unwritten = i;
  return g;
}

}  // namespace moefuzz

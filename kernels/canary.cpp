#include "kernels/canary.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/content_hasher.h"
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

#pragma once
// CANARY (BUGZOO.md invariant catalogue): run a kernel with framework-owned output memory that is
// poisoned (RunOptions::poison_bits, a NaN payload) and guarded by sentinel bands before and after,
// then report what the kernel touched that it must not have: band elements written (out-of-bounds
// stores such as a tile overhang, BUGZOO Z9), output elements still holding the poison (never
// written, or read before written: NaN arithmetic keeps the payload), and a modified input.
//
// The kernel receives the guarded region through RunOptions::output_data (kernels/kernel.h). A kernel
// that ignores it writes LayerResult::output instead; then only poison and input are checked and
// CanaryReport::guarded is false.
//
// Example:
//   moefuzz::GuardedRun g = moefuzz::run_guarded(*kernel, c, {.tactic = 1});
//   if (!g.canary.clean()) std::cerr << g.canary.summary() << "\n";
//   use(g.result.output);
#include <cstdint>
#include <optional>
#include <string>

#include "core/case.h"
#include "core/layer_io.h"
#include "kernels/kernel.h"

namespace moefuzz {

// Sentinel of the guard bands: a NaN whose payload differs from the default poison, so any store of
// any value (including the poison itself) into a band is visible.
inline constexpr uint32_t kCanaryBandBits = 0x7FA5A5A5u;
// Band length on each side, in floats: covers an overhang of one 128-wide tile minus one element,
// the widest N tile of the built-in kernels.
inline constexpr int64_t kCanaryBandFloats = 128;

struct CanaryReport {
  bool guarded = false;             // the kernel wrote through RunOptions::output_data
  int64_t band_before_written = 0;  // band elements no longer holding the sentinel
  int64_t band_after_written = 0;
  int64_t first_after_written = -1;  // offset past the output end of the first stray store
  int64_t unwritten = 0;             // output elements still holding the poison bits
  int64_t first_unwritten = -1;      // flat [T, H] index of the first
  bool input_modified = false;       // the case's tensors changed during the run
  bool clean() const {
    return band_before_written == 0 && band_after_written == 0 && unwritten == 0 && !input_modified;
  }
  // One line: "clean" or what was violated, with counts and first locations.
  std::string summary() const;
};

struct GuardedRun {
  LayerResult result;  // output copied out of the guarded region
  CanaryReport canary;
};

// Runs kernel.run_layer on guarded, poisoned output memory and checks it afterwards. The input check
// hashes the whole case before and after the run: `fingerprint` is case_fingerprint(c) when the caller
// knows it (saves the first hash); `check_input` false skips both (input_modified stays false) for a
// caller that does not read it.
GuardedRun run_guarded(const Kernel& kernel, const Case& c, const RunOptions& opts,
                       std::optional<uint64_t> fingerprint = std::nullopt, bool check_input = true);

// A 64-bit content hash (core/content_hasher.h) of every tensor of the case (the input-modification
// check): the layer-wide tensors and each expert's 128-bit content hash (core/expert_fingerprint.h).
// kRead hashes every expert's bytes as they are now: what a check after a kernel run must do.
// kRemembered takes each expert's remembered content hash (computed once per case for the `cuda`
// kernel's resident copies and the oracle's row memo anyway), the same value while no kernel has
// written the weights: for the fingerprint a check takes before its first run.
enum class ExpertBytes { kRead, kRemembered };
uint64_t case_fingerprint(const Case& c, ExpertBytes experts = ExpertBytes::kRead);

}  // namespace moefuzz

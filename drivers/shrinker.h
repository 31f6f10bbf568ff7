#pragma once
// The semantic shrinker: reduces a failing CaseRecipe while its failure signature (invariant/stage of
// the failing verdict) still fails, so a kernel engineer gets the smallest case that shows the bug.
//
// It works on recipes, not bytes: greedy passes run to a fixpoint, each trying simpler candidates
// first and keeping the first that still fails with the signature —
//   fewer tokens; fewer experts (n_group kept a divisor of E, k <= E); smaller top-k; fewer groups;
//   no shared experts / separate fusion; smaller H and I (multiples of 16); edits dropped one by one;
//   reals toward their default, 0, 1 and powers of two (rsf, gate/up scale ratio, SwiGLU limit /
//   alpha / beta, real edit values); routing / quantization options and value profiles back to
//   their first (tamest) enumerator; then, only when a size pass is stuck, the same size candidates
//   under a few other seeds.
// Every candidate is validate()d, supported by the kernel and within max_check_bytes before it is
// materialized; edits are re-fitted (indices and ids clamped) when a dimension shrinks.
//
// A signature-only check (default) runs just the signature's invariant on candidates, which is what
// makes shrinking fast; `all_invariants` instead requires the first failing verdict of the cheap
// registry to keep the signature.
//
// Inputs too large to check (estimate_case_bytes > max_check_bytes, e.g. a full DeepSeek-V3 layer
// at 6.4 GB) are not materialized: the shrinker first checks a structural proxy (fewest experts the
// grouping allows, H and I halved until it fits); when that does not fail with the expected
// signature (or any, when none is expected) - the failure needs a specific shape, hidden == 7168 or
// experts > 256, that the proxy drops - it tries proxies that keep one, then two, of the input's size
// dimensions at their input value and reduce the others to their floor, and shrinks from the first
// that fails. ShrinkResult::input_checked and proxy_kept say which; ShrinkResult::notes says, for
// every dimension left above its floor, why it was kept (the failure needs it, or smaller is invalid).
//
// Example:
//   auto k = moefuzz::make_kernel("mutant/z1-rsf-twice");
//   moefuzz::ShrinkResult s = moefuzz::shrink_recipe(*k, recipe, {.seconds = 30});
//   if (s.input_failed)
//     moefuzz::write_file_atomically("min.moefuzz", moefuzz::format_regression(s, "mutant/z1-rsf-twice",
//     "min.moefuzz"));
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/recipe.h"
#include "core/verdict.h"
#include "kernels/kernel.h"
#include "properties/invariant.h"

namespace moefuzz {

// Below this many bytes (estimate_case_bytes) a candidate is cheap enough to materialize and check
// in well under a second on one core; larger candidates are skipped (and a larger input is replaced
// by its structural proxy first). 64 MiB ~ a few hundred ms of materialization + one layer run.
inline constexpr int64_t kDefaultShrinkCheckBytes = int64_t{64} << 20;

struct ShrinkOptions {
  double seconds = 30;             // time budget; the best case so far is returned when it ends (0 = none)
  bool all_invariants = false;     // check the whole cheap registry instead of the signature's invariant
  std::string expected_signature;  // "" = the input's first failing verdict
  int64_t max_check_bytes = kDefaultShrinkCheckBytes;
  int seed_retries = 3;  // other seeds tried for a stuck size candidate
  RunOptions run;
  std::function<void(const std::string&)> log;  // progress lines (accepted steps); may be empty
};

struct ShrinkResult {
  bool input_failed = false;   // the input (or its proxy) failed: there was something to shrink
  bool input_checked = false;  // the input itself was checked (false: only its proxy, see header)
  std::string signature;       // invariant/stage preserved
  CaseRecipe original;
  CaseRecipe shrunk;       // == original when !input_failed
  Verdict verdict;         // the failing verdict on `shrunk`
  int64_t candidates = 0;  // candidates checked (materialized and run)
  int64_t accepted = 0;
  double seconds = 0;
  bool fixpoint = false;  // no pass could shrink further (false: the time budget ran out)
  // For an input too large to check: the input dimensions its starting proxy kept ("hidden 7168"),
  // "" for the structural proxy.
  std::string proxy_kept;
  // Why the shrinker stopped where it did: one line per size dimension left above its floor
  // ("kept hidden 7168: the failure needs it: ..."), or, when nothing could be checked, why not.
  std::vector<std::string> notes;
};

// Never throws for kernel misbehaviour (check_case turns it into verdicts); throws InputError when
// the input itself is invalid, unsupported by the kernel, or the expected signature is malformed.
ShrinkResult shrink_recipe(const Kernel& kernel, const CaseRecipe& input, const ShrinkOptions& options);

// Clamps every edit of `r` into the recipe's current edit targets (index dims and id values), and
// drops edits whose target no longer exists, so a recipe with shrunk dimensions stays valid.
CaseRecipe fit_edits(CaseRecipe r);

// One line describing a recipe's size: "tokens 4, experts 256 (+1 shared), top_k 8, n_group 8,
// topk_group 4, hidden 7168, inter 2048, edits 0".
std::string shape_summary(const CaseRecipe& r);

// The regression file (drivers/finding_file.h): kills, kernel, message, REPRO (`moefuzz replay OUT
// --kernel K`), then notes (before / after shapes, candidates and time), then the recipe.
std::string format_regression(const ShrinkResult& s, const std::string& kernel_name,
                              const std::string& out_path);

}  // namespace moefuzz

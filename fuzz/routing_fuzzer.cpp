// routing_fuzzer: bytes -> a routing recipe (T <= 8, E <= 32, k <= 8; a minimal expert MLP: H = I = 16),
// checked three ways: the kernel's top-k ids and weights against the routing oracle's set
// admissibility and weight bounds (oracles/routing_ref.h check_routing), and the STRUCT and SHIFT
// invariants of the registry through the check engine. Kernel: $MOEFUZZ_KERNEL (default `cpu`; the
// routing mutants, e.g. mutant/z3-group-mask-zero, show the target's teeth).
// Semantic features: mode x flags, shapes, near-ties (check_routing's near_tie), zero-token experts,
// duplicate ids, error/bound ratio of the weights.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "core/case.h"
#include "core/profile.h"
#include "drivers/check_engine.h"
#include "fuzz/finding.h"
#include "fuzz/recipe_bytes.h"
#include "fuzz/recipe_mutator.h"
#include "fuzz/semantic_features.h"
#include "fuzz/target_kernel.h"
#include "kernels/canary.h"
#include "oracles/routing_ref.h"

namespace {

using namespace moefuzz;

const CheckOptions& options() {
  static const CheckOptions o = [] {
    CheckOptions c;
    c.invariants = select_invariants("STRUCT,SHIFT");
    c.stop_at_first_failure = true;
    return c;
  }();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Kernel& kernel = fuzz::target_kernel();
  CaseRecipe r = fuzz::recipe_from_bytes(data, size, fuzz::routing_limits());
  r.profile = kernel.profile();
  if (!kernel.supports(r).empty()) return 0;
  fuzz::note_recipe(r);
  const Case c = materialize(r);
  const Profile& profile = profile_by_name(kernel.profile());

  // The check engine first: it turns kernel exceptions and crashes into findings.
  CaseReport rep = check_case(kernel, c, options());
  for (size_t i = 0; i < rep.verdicts.size(); ++i) {
    fuzz::note(fuzz::Feature::kOutcome,
               static_cast<uint32_t>(i + 1) * 4 + static_cast<uint32_t>(rep.verdicts[i].outcome));
    fuzz::note_ratio(static_cast<uint32_t>(i + 1), rep.verdicts[i].max_ratio);
  }
  if (rep.failed()) {
    fuzz::report_finding(r, rep.first_failure(), fuzz::target_kernel_name());
    return 0;
  }
  // STRUCT's baseline run when it ran (the same guarded run with default options), else a new one.
  const LayerResult run =
      rep.baseline ? std::move(*rep.baseline) : run_guarded(kernel, c, RunOptions{}).result;
  RoutingCheck rc;
  try {
    rc = check_routing(c, profile, run.routing);
  } catch (const std::exception& e) {  // the recipe is valid: the oracle must not reject it
    fuzz::report_finding(r, Verdict::fail("ORACLE", "route", std::string("check_routing threw: ") + e.what()),
                         fuzz::target_kernel_name());
    return 0;
  }
  int64_t ties = 0;
  for (uint8_t t : rc.near_tie) ties += t;
  fuzz::note(fuzz::Feature::kNearTie,
             static_cast<uint32_t>(r.routing.mode) * 3 + static_cast<uint32_t>(std::min<int64_t>(ties, 2)));
  fuzz::note_routing(r, run.routing);
  fuzz::note_ratio(0, rc.verdict.max_ratio);
  if (rc.verdict.failed()) fuzz::report_finding(r, rc.verdict, fuzz::target_kernel_name());
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  return moefuzz::fuzz::mutate_bytes(data, size, max_size, seed, moefuzz::fuzz::routing_limits(),
                                     moefuzz::fuzz::MutationFocus::kRouting);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                                            uint8_t* out, size_t max_out, unsigned seed) {
  return moefuzz::fuzz::cross_bytes(a, a_size, b, b_size, out, max_out, seed,
                                    moefuzz::fuzz::routing_limits());
}

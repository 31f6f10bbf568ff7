#pragma once
// Reference routing (SPEC.md §2): softmax top-k, sigmoid + correction bias grouped top-k, hash
// routing. Scores are computed in high precision (Boost.Multiprecision); selections follow the
// profile's tie rule (value descending, lower index wins) and are admitted as SETS: a kernel's ids
// are admissible if they are optimal for some scores within the scores' error bound (near-ties).
// Weights are then evaluated conditioned on the kernel's own ids.
//
// Weight semantics (what a kernel's RoutingDecision::weights must hold): the renormalized (if
// recipe.routing.renormalize) score of each selected expert, times routed_scaling_factor iff the
// PROFILE applies the scale in top-k (Profile::rsf_in_topk) - never the recipe's own flag alone;
// fused shared expert j appears as id E+j with weight 1/rsf (times rsf iff rsf_in_topk).
//
// Example:
//   moefuzz::RoutingCheck rc = moefuzz::check_routing(c, profile, result.routing);
//   if (!rc.verdict.passed()) report(rc.verdict);
//   double w = rc.expected_weights[t * slots + s];   // exact weight for the kernel's id in slot s
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/verdict.h"

namespace moefuzz {

struct RoutingCheck {
  Verdict verdict;                       // invariant "ORACLE"/"STRUCT", stage "route"
  std::vector<double> expected_weights;  // [T, slots], for the kernel's ids, in the profile's semantics
  std::vector<double> weight_bounds;     // [T, slots], error a correct kernel may make on each weight
  std::vector<uint8_t> near_tie;         // [T], 1 where the selection was ambiguous (admitted as a set)
  // The ids passed structure and set admissibility (the verdict can then fail only on weight values,
  // whose expectations and bounds above are complete).
  bool ids_admitted = false;
};

// The oracle's own decision (stable tie rule), weights rounded to the profile's weight dtype.
RoutingDecision reference_routing(const Case& c, const Profile& p);
// Whether token t's routing weights are specified: false when one of its logits is non-finite (NaN or
// +-inf: softmax over +inf is NaN in every implementation, SPEC.md leaves it open). Such a token's ids
// are still checked; its weights are neither compared nor required finite, by this oracle and by the
// invariants (STRUCT, FINITE, SCALE1) alike.
bool token_weights_specified(const Case& c, int64_t t);
// Admit the kernel's ids (structure + set admissibility) and bound its weights.
RoutingCheck check_routing(const Case& c, const Profile& p, const RoutingDecision& kernel);

}  // namespace moefuzz

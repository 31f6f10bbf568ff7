#pragma once
// Stage "route" (SPEC.md §2, §3.7 step 0): the kernel's routing decision. Admissibility: its ids
// must be a selection optimal for some scores within the scores' error bound (oracles/routing_ref.h
// check_routing, the one place routing is judged; the STRUCT invariant reuses it). Expected value
// and bound: each slot's weight for the kernel's own ids, in the profile's semantics. The expanded
// rows (the kernel's slots, then separately added shared experts) are the next stages' rows.
//
// Example:
//   moefuzz::stages::RouteStage r = moefuzz::stages::route(c, profile, kernel.routing);
//   if (!r.admissibility.passed()) return r.admissibility;   // e.g. an inadmissible expert set
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/verdict.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

struct RouteStage {
  Verdict admissibility;
  StageExpectation weights;  // "route" [T, slots]; empty when inadmissible
};
RouteStage route(const Case& c, const Profile& p, const RoutingDecision& kernel);

// The rows the expert stages compute: the kernel's (token, slot) pairs, then each token's separately
// added shared experts (weight 1). Sets `admissibility` to a failure (and returns what was expanded)
// when an id is outside [0, experts + shared); throws InputError when the decision's shape does not
// match the case.
std::vector<ExpandedRow> expand_rows(const Case& c, const RoutingDecision& routing, Verdict& admissibility);

}  // namespace moefuzz::stages

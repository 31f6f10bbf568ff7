#pragma once
// One factory per invariant of the catalogue (BUGZOO.md); properties/invariant_registry.cpp lists
// them in the order the check engine runs them (cheap and specific first, so the kill matrix names
// the most telling invariant first).
#include "properties/invariant.h"

namespace moefuzz::inv {

Invariant make_struct_invariant();
Invariant make_finite_invariant();
Invariant make_canary_invariant();
Invariant make_repeat_invariant();
Invariant make_scale1_invariant();
Invariant make_weight1_invariant();
Invariant make_shift_invariant();
Invariant make_dup_invariant();
Invariant make_pad_invariant();
Invariant make_gscale_invariant();
Invariant make_perm_invariant();
Invariant make_batch_invariant();
Invariant make_param_invariant();
Invariant make_tactic_invariant();
Invariant make_oracle_invariant();
Invariant make_ovf_invariant();
Invariant make_drift_invariant();

}  // namespace moefuzz::inv

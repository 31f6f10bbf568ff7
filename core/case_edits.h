#pragma once
// Applying Edit records (core/recipe.h) to a materialized Case: explicit values at chosen places,
// after the random draw, in order. Targets and value meanings are listed in core/case.h ("Edit
// targets"). Every index is checked against the tensor's shape and every value against its format;
// a bad edit throws moefuzz::InputError naming the edit, and leaves the case unchanged by that edit.
//
// Example:
//   moefuzz::Case c = moefuzz::materialize(r);        // applies r.edits already
//   moefuzz::apply_edit(c, {"gate.scale", {0, 3, 1}, 0x7E}, 0);   // block scale 448
//   moefuzz::apply_edit(c, {"hidden", {2, 5}, 1e30}, 1);          // rounded to bf16 (-> Inf)
#include <cstddef>
#include <span>

#include "core/case.h"

namespace moefuzz {

// `number` is the edit's position in its list (0-based), used in the error message ("edit #1").
void apply_edit(Case& c, const Edit& edit, size_t number);
void apply_edits(Case& c, std::span<const Edit> edits);

}  // namespace moefuzz

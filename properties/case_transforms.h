#pragma once
// Case transformations used by the metamorphic invariants. Each returns a new Case whose ideal
// output relates to the original's in a known way (stated per function). Transforms work on
// materialized tensors, so the relation holds bit-for-bit on the inputs.
//
// Example:
//   moefuzz::Case c2 = moefuzz::with_routed_scale(c, 1.0);     // SCALE1: out(c) = s * out(c2) (routed part)
//   moefuzz::Case p = moefuzz::permute_experts(c, perm);       // PERM: out(p) == out(c)
#include <cstdint>
#include <string>
#include <vector>

#include "core/case.h"

namespace moefuzz {

// Same case, routed_scaling_factor = s. The routed part of the output scales linearly with s.
Case with_routed_scale(const Case& c, double s);
// Same case without shared experts (routed part only).
Case without_shared_experts(const Case& c);
// Relabel routed experts: new expert perm[e] is old expert e (weights, scales, logits column, bias,
// per-expert activation scales, hash-table ids). For grouped routing `perm` must map groups to
// groups (see group_preserving_permutation). Output unchanged.
Case permute_experts(const Case& c, const std::vector<int64_t>& perm);
// A random permutation that maps whole groups to groups and experts within a group to the same
// slot pattern shuffled; for ungrouped routing any permutation. Deterministic in `seed`.
std::vector<int64_t> group_preserving_permutation(const Case& c, uint64_t seed);
// The tokens `rows` of the case (in that order), everything else unchanged. BATCH: each token's
// output equals its output in the full batch.
Case select_tokens(const Case& c, const std::vector<int64_t>& rows);
// Zero-pad the hidden size to `new_hidden` and/or the intermediate size to `new_inter` (multiples of
// 16, >= the current sizes). PAD: the first H output columns are unchanged, the new ones are zero.
Case pad_dims(const Case& c, int64_t new_hidden, int64_t new_inter);
// Multiply the decoded block scales of one weight matrix of one expert by 2^k and divide its global
// dequantization scale by 2^k ("gate", "up" or "down"). Returns false in `ok` when some scale
// byte would leave the exactly-representable E4M3 normal range (then the case is unchanged).
// GSCALE: the dequantized weights, hence the output, are unchanged.
Case rescale_weight_global(const Case& c, int64_t expert, const std::string& which, int k, bool* ok);
// Add `shift` to every router logit (exactly representable shifts only; returns false in `ok`
// otherwise). SHIFT (softmax routing): ids and weights unchanged.
Case shift_logits(const Case& c, float shift, bool* ok);

}  // namespace moefuzz

#pragma once
// Top-k selection (with an optional DeepSeek group stage) and its set admissibility (SPEC.md §2.1).
//
// Selection (the oracle's own decision): group score = sum of the top-2 scores in the group (or the
// max, without a correction bias); the topk_group best groups survive, the others are masked to -inf;
// then the k best experts. Order: value descending, lower index first on exact ties.
//
// Admissibility: each expert's kernel-visible score lies in [lo, hi]. A kernel's id set S is
// admissible iff SOME scores in those boxes make S the selection. This is decided exactly:
//   * experts of S are set to hi (raises their groups and beats everything), experts of groups
//     outside the chosen group set to lo, and unselected experts of chosen groups to min(hi, T) where
//     T = min over S of hi (they must not beat S). Each choice is individually optimal for every
//     constraint (all are monotone), so S is admissible iff with these values
//       - every unselected expert b of a chosen group has lo_b <= T, and
//       - some group set G (|G| = topk_group, G contains S's groups) has min_G score >= max_{not G} score
//         (chosen groups at their best, others at their worst; group scores widened by one fp32
//         rounding of the top-2 sum).
//     G is found by a threshold sweep over the candidate group scores (no enumeration).
//   * Exact ties at a box edge are admitted both ways (a measure-zero over-admission, never a false
//     positive), EXCEPT experts whose inputs are bit-identical (`identity` equal): a deterministic
//     kernel computes identical scores for them, so under TieRule::kLowerIndexWins the lower index
//     must be the selected one when they straddle the boundary.
//
// Example:
//   moefuzz::TopkSpec spec{.experts = 16, .k = 4, .n_group = 4, .topk_group = 2, .group_top2 = true};
//   std::vector<int32_t> ids = moefuzz::select_topk(scores, spec);
//   moefuzz::Admission a = moefuzz::admit_topk_set(lo, hi, identity, spec, TieRule::kLowerIndexWins,
//   kernel_ids);
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/profile.h"

namespace moefuzz {

struct TopkSpec {
  int64_t experts = 0;
  int64_t k = 0;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  bool group_top2 = true;  // group score: sum of top-2 (with correction bias) or max (without)
  bool has_group_stage() const { return n_group > 1 && topk_group < n_group; }
  int64_t group_size() const { return experts / n_group; }
};

// The selection for exact scores, ordered by value descending, lower index first on ties.
std::vector<int32_t> select_topk(std::span<const double> scores, const TopkSpec& spec);

struct Admission {
  bool admissible = true;
  std::string reason;      // why not (names the experts / groups and their bounds)
  bool ambiguous = false;  // more than one set is admissible at these bounds (near-tie)
};

// `selected` holds k distinct ids in [0, experts) (check structure first). `identity` may be empty.
Admission admit_topk_set(std::span<const double> lo, std::span<const double> hi,
                         std::span<const uint64_t> identity, const TopkSpec& spec, TieRule tie,
                         std::span<const int32_t> selected);

}  // namespace moefuzz

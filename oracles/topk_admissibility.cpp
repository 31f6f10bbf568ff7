#include "oracles/topk_admissibility.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace moefuzz {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// One fp32 rounding of the kernel's top-2 sum moves it by <= 2^-24 of itself; widened to 2^-23 to
// also cover the double evaluation here.
constexpr double kGroupSumSlack = 0x1p-23;

// Top-2 sum (or max) of `values` over the members of group g.
double group_score(std::span<const double> values, const TopkSpec& spec, int64_t g) {
  const int64_t size = spec.group_size();
  double first = -kInf, second = -kInf;
  for (int64_t e = g * size; e < (g + 1) * size; ++e) {
    const double v = values[static_cast<size_t>(e)];
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  if (!spec.group_top2 || size < 2) return first;
  return first + second;
}

// Indices ordered by value descending, lower index first on ties.
std::vector<int64_t> ranked(std::span<const double> values, const std::vector<int64_t>& candidates) {
  std::vector<int64_t> order = candidates;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return values[static_cast<size_t>(a)] > values[static_cast<size_t>(b)];
  });
  return order;
}

}  // namespace

std::vector<int32_t> select_topk(std::span<const double> scores, const TopkSpec& spec) {
  std::vector<int64_t> eligible;
  if (spec.has_group_stage()) {
    std::vector<double> gscore(static_cast<size_t>(spec.n_group));
    std::vector<int64_t> groups(static_cast<size_t>(spec.n_group));
    for (int64_t g = 0; g < spec.n_group; ++g) {
      gscore[static_cast<size_t>(g)] = group_score(scores, spec, g);
      groups[static_cast<size_t>(g)] = g;
    }
    const std::vector<int64_t> order = ranked(gscore, groups);
    std::vector<int64_t> chosen(order.begin(), order.begin() + spec.topk_group);
    std::sort(chosen.begin(), chosen.end());
    for (int64_t g : chosen) {
      for (int64_t e = g * spec.group_size(); e < (g + 1) * spec.group_size(); ++e) eligible.push_back(e);
    }
  } else {
    eligible.resize(static_cast<size_t>(spec.experts));
    std::iota(eligible.begin(), eligible.end(), 0);
  }
  const std::vector<int64_t> order = ranked(scores, eligible);
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < spec.k && i < static_cast<int64_t>(order.size()); ++i) {
    ids.push_back(static_cast<int32_t>(order[static_cast<size_t>(i)]));
  }
  return ids;
}

Admission admit_topk_set(std::span<const double> lo, std::span<const double> hi,
                         std::span<const uint64_t> identity, const TopkSpec& spec, TieRule tie,
                         std::span<const int32_t> selected) {
  Admission adm;
  const size_t n = static_cast<size_t>(spec.experts);
  std::vector<uint8_t> in_s(n, 0);
  double t_hi = kInf, t_lo = kInf;  // min over S of hi / of lo
  int64_t t_hi_expert = -1;
  for (int32_t a : selected) {
    in_s[static_cast<size_t>(a)] = 1;
    if (hi[static_cast<size_t>(a)] < t_hi) {
      t_hi = hi[static_cast<size_t>(a)];
      t_hi_expert = a;
    }
    t_lo = std::min(t_lo, lo[static_cast<size_t>(a)]);
  }
  const bool grouped = spec.has_group_stage();
  const int64_t gsize = grouped ? spec.group_size() : spec.experts;
  const int64_t ngroups = grouped ? spec.n_group : 1;
  std::vector<uint8_t> in_r(static_cast<size_t>(ngroups), 0);
  for (int32_t a : selected) in_r[static_cast<size_t>(a / gsize)] = 1;

  // Per group: can it be a chosen group (its unselected experts can stay at or below T, identical-
  // input ties respected), its best score when chosen, its worst score when not chosen.
  std::vector<uint8_t> feasible(static_cast<size_t>(ngroups), 1);
  std::vector<std::string> why_not(static_cast<size_t>(ngroups));
  std::vector<double> best(static_cast<size_t>(ngroups)), worst(static_cast<size_t>(ngroups));
  std::vector<double> capped(n), lows(lo.begin(), lo.end()), highs(hi.begin(), hi.end());
  for (size_t e = 0; e < n; ++e) capped[e] = in_s[e] ? hi[e] : std::min(hi[e], t_hi);
  for (int64_t g = 0; g < ngroups; ++g) {
    for (int64_t e = g * gsize; e < (g + 1) * gsize; ++e) {
      const size_t b = static_cast<size_t>(e);
      if (in_s[b]) continue;
      if (lo[b] > t_hi) {
        feasible[static_cast<size_t>(g)] = 0;
        why_not[static_cast<size_t>(g)] =
            fmt::format("unselected expert {} (score >= {:.9g}) beats selected expert {} (score <= {:.9g})",
                        e, lo[b], t_hi_expert, t_hi);
        break;
      }
      if (tie == TieRule::kLowerIndexWins && !identity.empty()) {
        for (int32_t a : selected) {
          if (identity[static_cast<size_t>(a)] == identity[b] && e < a) {
            feasible[static_cast<size_t>(g)] = 0;
            why_not[static_cast<size_t>(g)] = fmt::format(
                "experts {} and {} have identical inputs (equal scores); the lower index must win", e, a);
            break;
          }
        }
        if (!feasible[static_cast<size_t>(g)]) break;
      }
    }
    if (grouped) {
      const double c = group_score(capped, spec, g), o = group_score(lows, spec, g);
      best[static_cast<size_t>(g)] = c + kGroupSumSlack * std::fabs(c);
      worst[static_cast<size_t>(g)] = o - kGroupSumSlack * std::fabs(o);
    }
  }

  // Near-tie flag (informational): an unselected eligible expert could reach a selected one.
  for (size_t e = 0; e < n; ++e) {
    if (!in_s[e] && in_r[e / static_cast<size_t>(gsize)] && hi[e] >= t_lo) adm.ambiguous = true;
  }

  for (int64_t g = 0; g < ngroups; ++g) {
    if (in_r[static_cast<size_t>(g)] && !feasible[static_cast<size_t>(g)]) {
      adm.admissible = false;
      adm.reason = why_not[static_cast<size_t>(g)];
      return adm;
    }
  }
  if (!grouped) return adm;

  double r_worst = kInf;
  for (int64_t g = 0; g < ngroups; ++g) {
    if (in_r[static_cast<size_t>(g)]) r_worst = std::min(r_worst, worst[static_cast<size_t>(g)]);
  }
  for (int64_t g = 0; g < ngroups; ++g) {
    if (!in_r[static_cast<size_t>(g)] && group_score(highs, spec, g) * (1 + kGroupSumSlack) >= r_worst) {
      adm.ambiguous = true;
    }
  }

  // Threshold sweep: theta = min over the chosen groups of their best score (proof in the header).
  const size_t tg = static_cast<size_t>(spec.topk_group);
  for (int64_t cand = 0; cand < ngroups; ++cand) {
    const double theta = best[static_cast<size_t>(cand)];
    size_t must = 0, can = 0;
    bool ok = true;
    for (int64_t g = 0; g < ngroups && ok; ++g) {
      const size_t gi = static_cast<size_t>(g);
      const bool available = feasible[gi] && best[gi] >= theta;
      const bool forced = in_r[gi] || worst[gi] > theta;
      if (forced && !available) ok = false;
      must += forced ? 1 : 0;
      can += available ? 1 : 0;
    }
    if (ok && must <= tg && tg <= can) return adm;
  }
  adm.admissible = false;
  adm.reason = fmt::format(
      "no choice of {} groups containing the selected experts' groups beats the other groups within the "
      "score "
      "bounds",
      spec.topk_group);
  for (int64_t g = 0; g < ngroups; ++g) {
    if (!in_r[static_cast<size_t>(g)] && !feasible[static_cast<size_t>(g)] &&
        worst[static_cast<size_t>(g)] > r_worst) {
      adm.reason += "; group " + std::to_string(g) + " must be chosen but " + why_not[static_cast<size_t>(g)];
      break;
    }
  }
  return adm;
}

}  // namespace moefuzz

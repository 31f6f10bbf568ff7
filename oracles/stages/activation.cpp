#include "oracles/stages/activation.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace moefuzz::stages {

ActivationRows activation(const Profile& p, const Swiglu& sw, const ExpertRows& rows, const Gemm1Rows& g,
                          int64_t I, StageExpectation* act) {
  const int64_t n = rows.size();
  ActivationRows h;
  h.cols = I;
  h.lo.resize(static_cast<size_t>(n * I));
  h.hi.resize(h.lo.size());
  h.center.resize(h.lo.size());
  h.nan.assign(static_cast<size_t>(n), 0);
  std::vector<Interval> row(static_cast<size_t>(I));
  for (int64_t j = 0; j < n; ++j) {
    const ExpandedRow& er = rows.row(j);
    swiglu_kernel_intervals(&g.gate[static_cast<size_t>(j * I)], &g.up[static_cast<size_t>(j * I)], I, sw,
                            row.data());
    bool nan = false;
    for (int64_t o = 0; o < I; ++o) {
      const size_t gi = static_cast<size_t>(j * I + o);
      Interval x = row[static_cast<size_t>(o)];
      if (!is_nan(x) && p.silu_may_round_bf16) {
        // bf16(silu(g)) is within 2^-8 of silu(g) relative (plus the subnormal floor, flushes
        // included), and |silu(g) * v| <= max|x|: widen by that much times |v| <= max|up| + |beta|.
        const Interval& u = g.up[gi];
        const double v = std::max(std::fabs(u.lo), std::fabs(u.hi)) + std::fabs(sw.beta);
        const double w =
            kBf16Unit * std::max(std::fabs(x.lo), std::fabs(x.hi)) * (1 + kBf16Unit) + kUnderflowFloor * v;
        x = {x.lo - w, x.hi + w};
      }
      if (!is_nan(x) && p.bf16_after_activation) x = round_to_bf16(x);
      if (er.slot >= 0) store(act, er.slot, o, x);
      nan |= is_nan(x);
      h.lo[gi] = x.lo;
      h.hi[gi] = x.hi;
      h.center[gi] = x.center();
    }
    h.nan[static_cast<size_t>(j)] = nan ? 1 : 0;
  }
  return h;
}

}  // namespace moefuzz::stages

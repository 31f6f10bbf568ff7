#include "oracles/stages/activation.h"

#include <cmath>
#include <vector>

#include "oracles/stages/stage_rows.h"

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
  const ActivationFinish finish{.silu_may_round_bf16 = p.silu_may_round_bf16,
                                .bf16 = p.bf16_after_activation,
                                .abs_beta = std::fabs(sw.beta)};
  for (int64_t j = 0; j < n; ++j) {
    const ExpandedRow& er = rows.row(j);
    const size_t at = static_cast<size_t>(j * I);
    swiglu_kernel_intervals(&g.gate[at], &g.up[at], I, sw, row.data());
    const bool nan =
        finish_activation_row(finish, row.data(), &g.up[at], I, &h.lo[at], &h.hi[at], &h.center[at]);
    if (er.slot >= 0) store_row(act, er.slot, 0, row.data(), I);
    h.nan[static_cast<size_t>(j)] = nan ? 1 : 0;
  }
  return h;
}

}  // namespace moefuzz::stages

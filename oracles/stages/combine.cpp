#include "oracles/stages/combine.h"

#include <algorithm>
#include <cmath>

#include "oracles/stages/combine_rows.h"

namespace moefuzz::stages {

StageExpectation combine(const Case& c, const Profile& p, std::span<const ExpandedRow> rows,
                         const ExpertOutputs& y) {
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
  const int64_t R = static_cast<int64_t>(rows.size());
  StageExpectation out = make_stage("output", T, H);
  const float rsf = static_cast<float>(c.recipe.routing.routed_scaling_factor);
  const bool rsf_in_combine = !p.rsf_in_topk;
  std::vector<std::vector<int64_t>> routed_rows(static_cast<size_t>(T)), shared_rows(static_cast<size_t>(T));
  for (int64_t r = 0; r < R; ++r)
    (rows[static_cast<size_t>(r)].slot >= 0
         ? routed_rows
         : shared_rows)[static_cast<size_t>(rows[static_cast<size_t>(r)].token)]
        .push_back(r);
  // Per token, the routed rows are accumulated row by row over all H columns (each column's terms
  // in the rows' order, as a column-by-column walk would: the same doubles), so the inner loop reads
  // each row's intervals contiguously. Every evaluation of a check runs this stage (the row memo
  // reuses GEMM rows, not the combine), so its memory order matters.
  const bool bf16_products = p.combine == CombineAccum::kBf16Atomics ||
                             p.combine == CombineAccum::kBf16Products ||
                             p.combine == CombineAccum::kBf16EpilogueProducts;
  CombineAccumulators acc(H);
  for (int64_t t = 0; t < T; ++t) {
    const auto& rr = routed_rows[static_cast<size_t>(t)];
    const double nslots = static_cast<double>(rr.size());
    // acc.peak: the largest magnitude any fp32/bf16 intermediate of a correct combine may take (every
    // interval includes its rounding errors); past bf16's largest finite value it may round to Inf
    // (and Inf - Inf = NaN): nothing can be said, as for a non-finite input.
    acc.reset();
    for (int64_t r : rr) {
      double w = rows[static_cast<size_t>(r)].weight;
      if (p.combine == CombineAccum::kBf16Products) w = round_to_bf16(static_cast<float>(w));
      // bf16 products: the atomics' and cutlass_moe_fp4's bf16(w * y), and SGLang Triton's GEMM2
      // epilogue (MUL_ROUTED_WEIGHT: the fp32 accumulator times the fp32 weight, stored as bf16 for
      // moe_sum_reduce).
      accumulate_weighted_row(w, y.lo_row(r), y.hi_row(r), bf16_products, acc);
    }
    // Accumulation of the slot terms in any order: slots - 1 additions (+1 unit for the oracle's
    // double sums); bf16 atomics round every one of the `slots` additions to bf16.
    const CombineFinish finish{.gamma = p.combine == CombineAccum::kBf16Atomics ? gamma_n(nslots, kBf16Unit)
                                                                                : gamma_n(nslots, kFp32Unit),
                               .floor_n = nslots * kUnderflowFloor,
                               .rsf_in_combine = rsf_in_combine,
                               .rsf = rsf,
                               .bf16_output = p.bf16_output};
    const auto& sr = shared_rows[static_cast<size_t>(t)];
    if (sr.empty()) {
      finish_routed_columns(acc, finish, out, t);
      continue;
    }
    for (int64_t o = 0; o < H; ++o) {
      double peak;
      Interval s = routed_output(acc, o, finish, &peak);
      bool nan = acc.nan[static_cast<size_t>(o)] != 0;
      // The separate shared MLPs form their own output tensor (SGLang/vLLM: `shared_output`, in the
      // model dtype) that is added to the routed output afterwards (recipe.h, kSeparate). With
      // several shared experts their outputs are summed first, either in fp32 and rounded once
      // or by bf16 tensor adds in any order (each add a bf16 rounding point): both lie in
      // sum +- gamma_{n-1}(u) * sum|y| with u the unit of the output dtype, then RN to bf16 once
      // more (monotone, idempotent on a bf16 result).
      double slo = 0, shi = 0, smag = 0;
      for (int64_t r : sr) {
        const Interval yi = y.at(r, o);
        nan |= is_nan(yi);
        slo += yi.lo;
        shi += yi.hi;
        smag += std::max(std::fabs(yi.lo), std::fabs(yi.hi));
      }
      Interval sh_sum{slo, shi};
      if (sr.size() > 1) {
        // +1 unit absorbs the oracle's own double sums (< n 2^-53 relative).
        const double e =
            gamma_n(static_cast<double>(sr.size()), p.bf16_output ? kBf16Unit : kFp32Unit) * smag +
            static_cast<double>(sr.size()) * kUnderflowFloor;
        sh_sum = {slo - e, shi + e};
      }
      // The shared tensor is in the output dtype even for one expert whose GEMM2 output is fp32.
      if (p.bf16_output) sh_sum = round_to_bf16(sh_sum);
      // routed + shared: one fp32 addition (+1 unit for the oracle's double add), then the output
      // rounding point.
      const double m =
          std::max(std::fabs(s.lo), std::fabs(s.hi)) + std::max(std::fabs(sh_sum.lo), std::fabs(sh_sum.hi));
      const double e = gamma_n(2, kFp32Unit) * m + kUnderflowFloor;
      s = {s.lo + sh_sum.lo - e, s.hi + sh_sum.hi + e};
      // A partial shared sum is within smag + its error term, which is less than sh_sum's width.
      peak = std::max({peak, smag + (sh_sum.hi - sh_sum.lo), m + e});
      if (p.bf16_output) s = round_to_bf16(s);
      store(&out, t, o, nan || !(peak < kBf16Max) ? Interval{kNaN, kNaN} : s);
    }
  }
  return out;
}

}  // namespace moefuzz::stages

// OVF: index products that cross 2^31 (and 2^32). For each product a kernel forms
// (core/index_products.h: expert arenas, scales, permutation, expanded rows, GEMM outputs, combine)
// the values just below, at and above the limit are checked against the oracle, not only the absence
// of a crash (the same root cause gave an illegal access in one run and silent garbage in another,
// BUGZOO Z7).
//
// Kernels that honour the index window (KernelClaims::index_window: the CPU pipeline and its mutants)
// are probed on the case itself: 12 runs (6 windows per limit), each moving the case in the logical
// index space (properties/ovf_cases.h) so that products cross the limit inside it. A correct kernel
// computes the same values at any window; a run whose output differs from the baseline's (and not
// because the kernel differs from itself without a window: REPEAT's) is compared with the oracle.
// Nothing large is allocated, so OVF is a standard invariant.
//
// Kernels that form their offsets on their own buffers only (the CUDA kernel, plugins) need a case
// whose arena really crosses 2^31 (~4 GiB, properties/ovf_cases.cpp ovf_probes). That probe does not
// depend on the base case, so it runs once per kernel and profile in a process and its verdict is
// reused; it applies to device kernels (KernelClaims::materialized_ovf).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "core/case.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"
#include "properties/ovf_cases.h"

namespace moefuzz::inv {
namespace {

bool same_run(const LayerResult& a, const LayerResult& b) {
  const auto bits = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](float u, float v) {
             return std::bit_cast<uint32_t>(u) == std::bit_cast<uint32_t>(v);
           });
  };
  const auto opt = [&](const std::optional<std::vector<float>>& x,
                       const std::optional<std::vector<float>>& y) {
    return x.has_value() == y.has_value() && (!x || bits(*x, *y));
  };
  return bits(a.output, b.output) && opt(a.gemm1, b.gemm1) && opt(a.activation, b.activation) &&
         opt(a.gemm2, b.gemm2) && a.routing.ids == b.routing.ids;
}

// The run on `c` judged against the oracle (conditioned on its own decisions), vacuity included.
Verdict judge(CheckContext& ctx, const Case& c, const LayerResult& r) {
  const OracleEvaluation ev = evaluate(c, ctx.profile(), r);
  Verdict v = compare_layer(ev, r);
  v.invariant = "OVF";
  if (v.passed() && ev.stage("output") != nullptr) {
    const StageExpectation& out = output_stage(ev);
    v = unless_vacuous(v, to_double(r.output), out.expected, out.bound, out.rows, out.cols);
  }
  return v;
}

Verdict window_probes(CheckContext& ctx) {
  const LayerResult& base = ctx.baseline();
  const std::vector<int32_t> ids(base.routing.ids.begin(), base.routing.ids.end());
  int64_t compared = 0;
  for (const OvfWindowProbe& probe : ovf_window_probes(ctx.base_case().recipe, ids)) {
    RunOptions opts = ctx.options();
    opts.index_window = probe.window;
    const LayerResult r = ctx.run(ctx.base_case(), &opts);
    compared += static_cast<int64_t>(r.output.size());
    if (same_run(r, base)) continue;  // the baseline's values: ORACLE judges those
    // A run without the window that differs too is non-determinism (REPEAT's), not an index product.
    if (!same_run(ctx.run(ctx.base_case()), base)) continue;
    Verdict v = judge(ctx, ctx.base_case(), r);
    if (v.failed()) {
      v.message = fmt::format("{}: {}", probe.name, v.message);
      return v;
    }
  }
  Verdict v = Verdict::pass("OVF", "layer");
  v.compared = compared;
  return v;
}

Verdict materialized_probes(CheckContext& ctx) {
  std::optional<Verdict> vacuous;
  int64_t compared = 0;
  for (const OvfProbe& probe : ovf_probes(ctx.base_case().recipe)) {
    if (!ctx.kernel().supports(probe.recipe).empty()) continue;
    const Case c = materialize(probe.recipe, probe.max_bytes);
    Verdict v = judge(ctx, c, ctx.run(c));
    if (v.outcome == Outcome::kVacuous) vacuous = v;
    if (v.failed()) {
      v.message = fmt::format("{}: {}", probe.name, v.message);
      return v;
    }
    compared += v.compared;
  }
  if (vacuous) return *vacuous;
  Verdict v = Verdict::pass("OVF", "layer");
  v.compared = compared;  // 0: the kernel supports no probe (vacuous, not a pass)
  return v;
}

}  // namespace

Invariant make_ovf_invariant() {
  Invariant inv;
  inv.code = "OVF";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description = "every index product just below/at/above 2^31 and 2^32: values checked, not only crashes";
  inv.applies = [](const Kernel& k, const CaseRecipe&) -> std::string {
    const KernelClaims claims = k.claims();
    if (claims.index_window || claims.materialized_ovf) return "";
    return "the kernel neither honours RunOptions::index_window nor runs where a 2^31 case fits "
           "(KernelClaims::materialized_ovf)";
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    if (ctx.kernel().claims().index_window) return window_probes(ctx);
    // The materialized probe ignores the base case's shape: once per kernel and profile.
    // Held while the probe runs: parallel workers (check -j) wait for the one probe instead of each
    // materializing its own ~4 GiB case at once.
    static std::mutex mu;
    static std::map<std::string, Verdict> done;
    const std::string key = ctx.kernel().name() + "|" + ctx.profile().name;
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = done.find(key); it != done.end()) return it->second;
    Verdict v = materialized_probes(ctx);
    done.emplace(key, v);
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv

// REPEAT and CANARY: the two invariants about what a kernel does with memory and time rather than
// arithmetic.
// REPEAT: the same input run several times gives bit-identical output where the kernel claims
//   determinism (races such as a missing warp sync show up as run-to-run differences, Z6).
// CANARY: outputs are poisoned with NaN and guarded by sentinel bands; nothing is left unwritten,
//   nothing is written outside, two runs with different poison fills agree (no reads of unwritten
//   memory), and the kernel does not write its inputs.
#include <fmt/format.h>

#include "kernels/canary.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {

Invariant make_repeat_invariant() {
  Invariant inv;
  inv.code = "REPEAT";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description = "repeated runs are bit-identical where the kernel claims determinism";
  inv.applies = [](const Kernel& k, const CaseRecipe&) {
    return k.claims().deterministic ? std::string() : std::string("kernel does not claim determinism");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const LayerResult& base = ctx.baseline();
    const auto& s = ctx.base_case().recipe.shape;
    constexpr int kRepeats = 4;  // races show up within a few runs on a CPU; campaigns repeat more
    int64_t compared = 0;
    for (int i = 0; i < kRepeats; ++i) {
      const LayerResult again = ctx.run_for_comparison(ctx.base_case());
      Verdict v = compare_bitwise("REPEAT", "output", again.output, base.output, s.tokens, s.hidden);
      if (v.failed()) {
        v.message = fmt::format("run {} differs from the first: {}", i + 2, v.message);
        return v;
      }
      if (again.routing.ids != base.routing.ids)
        return Verdict::fail("REPEAT", "route", fmt::format("run {} selected different experts", i + 2));
      compared += v.compared;
    }
    Verdict v = Verdict::pass("REPEAT", "output");
    v.compared = compared;
    return v;
  };
  return inv;
}

Invariant make_canary_invariant() {
  Invariant inv;
  inv.code = "CANARY";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description =
      "poisoned outputs fully written, guard bands intact, poison does not leak, inputs unchanged";
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    if (!ctx.baseline_fault().empty()) return Verdict::fail("CANARY", "output", ctx.baseline_fault());
    RunOptions other = ctx.options();
    other.poison_bits = 0xFFC0DEADu;  // a second NaN payload: outputs must not depend on the fill
    // The guarded run compares the inputs after it with their fingerprint taken at the start, so it
    // sees a change made by this run or by any run before it: one hash of the whole case, not two.
    const GuardedRun g = run_guarded(ctx.kernel(), c, other, ctx.input_hash_at_start());
    if (g.canary.input_modified)
      return Verdict::fail("CANARY", "input", "the kernel modified its input tensors");
    if (!g.canary.clean()) return Verdict::fail("CANARY", "output", g.canary.summary());
    if (!ctx.kernel().claims().deterministic) {
      Verdict v = Verdict::pass("CANARY", "output");  // every output element checked written
      v.compared = static_cast<int64_t>(g.result.output.size());
      return v;
    }
    Verdict v = compare_bitwise("CANARY", "output", g.result.output, ctx.baseline().output,
                                c.recipe.shape.tokens, c.recipe.shape.hidden);
    if (v.failed()) v.message = "output depends on the poison fill (reads unwritten memory): " + v.message;
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv

// Routing mutants (SPEC.md §2).
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_routing_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z3 (SGLang #3705): unselected groups masked with 0, so with negative biased scores an
  // expert of an unselected group can win. The expert set is well formed (STRUCT holds) but not
  // admissible: ORACLE, and TACTIC, which admits each tactic's own decisions, catch it.
  out.push_back(mutant_entry("mutant/z3-group-mask-zero",
                             "BUGZOO Z3: unselected expert groups masked with 0 instead of -inf",
                             {"ORACLE", "TACTIC"}, [](cpu::CpuConfig& c) { c.dev.group_mask_zero = true; }));
  // BUGZOO Z4 (SGLang #35160): renormalize=False returned the raw logits as weights.
  out.push_back(mutant_entry(
      "mutant/z4-raw-logit-weights", "BUGZOO Z4: renormalize=false returns raw logits as weights",
      {"STRUCT", "SHIFT", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.raw_scores_without_renorm = true; }));
  // BUGZOO "flag products unchecked": a runner that always renormalizes, ignoring renormalize=false -
  // invisible to every test that only runs renormalize=true. Its weights are inadmissible, which
  // ORACLE reports; PARAM and WEIGHT1 compare admitted runs only and defer to it (the swiglu-limit
  // mutant gives PARAM its teeth).
  out.push_back(mutant_entry("mutant/renormalize-ignored",
                             "flags: renormalize=false ignored (weights always renormalized)", {"ORACLE"},
                             [](cpu::CpuConfig& c) {
                               if (c.mode != RoutingMode::kHash) c.renormalize = true;
                             }));
  // BUGZOO Z5 (FlashInfer #3803): no epsilon in w / sum -> 0/0 NaN when every selected sigmoid underflows.
  out.push_back(mutant_entry(
      "mutant/z5-no-renorm-epsilon", "BUGZOO Z5: renormalization without epsilon (0/0 NaN on underflow)",
      {"FINITE", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.no_renorm_epsilon = true; }));
  // BUGZOO Z8 (llama.cpp #24591): a repeated expert id in a hash row assumed impossible; the slot is dropped.
  out.push_back(mutant_entry("mutant/z8-duplicate-id-dropped",
                             "BUGZOO Z8: repeated expert id in a token's row dropped", {"DUP"},
                             [](cpu::CpuConfig& c) { c.dev.duplicate_id_drops_slot = true; }));
  // SHIFT class (BUGZOO "tame inputs": routers tested on logits near 0): softmax evaluated in half
  // precision on the raw logits, without subtracting the row max. Mathematically shift-invariant, in
  // fp16 it is not: the precision of x and exp(x) depends on where the logits sit (weights off by
  // ~2^-9 after a +8 shift) and exp overflows past 11.09 (inf / inf = NaN weights).
  out.push_back(mutant_entry(
      "mutant/softmax-fp16-no-max", "SHIFT: softmax as fp16 exp of the raw logits (no max subtraction)",
      {"SHIFT", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.fp16_softmax_no_max = true; }));
}

}  // namespace moefuzz::mutants

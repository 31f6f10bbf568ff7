// moe_layer_fuzzer: bytes -> a small recipe (T <= 8, H <= 128, I <= 64, E <= 16; fuzz/recipe_bytes.h)
// -> the whole pipeline of the kernel under test through the invariant registry's cheap invariants
// (the check engine, drivers/check_engine.h). A failed verdict is a finding (fuzz/finding.h).
//   $MOEFUZZ_KERNEL      registry name, mutant (mutant/z1-rsf-twice) or plugin .so path; default `cpu`
//   $MOEFUZZ_INVARIANTS  comma-separated invariant codes; default kCheapInvariants below
// Semantic features: mode x flags, shapes around tile boundaries, value profiles, edits, zero-token
// experts and duplicate ids (the routing of the kernel's own baseline run), and per invariant its
// outcome and error/bound ratio bucket.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/case.h"
#include "core/errors.h"
#include "drivers/check_engine.h"
#include "fuzz/finding.h"
#include "fuzz/recipe_bytes.h"
#include "fuzz/recipe_mutator.h"
#include "fuzz/semantic_features.h"
#include "fuzz/target_kernel.h"

namespace {

using namespace moefuzz;

// Every non-expensive invariant except those that re-run the kernel on several transformed cases
// (PERM, BATCH, PAD, PARAM, TACTIC, GSCALE): those cost 2-4 more kernel + oracle runs each and belong to
// `moefuzz check` campaigns; REPEAT, SCALE1, SHIFT and DUP add one run each and carry kills of their own.
constexpr const char* kCheapInvariants = "STRUCT,FINITE,CANARY,REPEAT,SCALE1,WEIGHT1,SHIFT,DUP,ORACLE";

const CheckOptions& options() {
  static const CheckOptions o = [] {
    const char* e = std::getenv("MOEFUZZ_INVARIANTS");
    try {
      CheckOptions o;
      o.invariants = select_invariants(e != nullptr && *e != '\0' ? e : kCheapInvariants);
      o.stop_at_first_failure = true;
      return o;
    } catch (const InputError& err) {
      std::fprintf(stderr, "moefuzz-fuzz: MOEFUZZ_INVARIANTS: %s\n", err.what());
      std::exit(2);
    }
  }();
  return o;
}

// Index of an invariant in the registry (feature slots are per registry position).
uint32_t registry_index(const std::string& code) {
  const auto& all = invariant_registry();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].code == code) return static_cast<uint32_t>(i);
  return static_cast<uint32_t>(all.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Kernel& kernel = fuzz::target_kernel();
  CaseRecipe r = fuzz::recipe_from_bytes(data, size, fuzz::layer_limits());
  r.profile = kernel.profile();
  if (!kernel.supports(r).empty()) return 0;
  fuzz::note_recipe(r);
  const Case c = materialize(r);
  const CaseReport rep = check_case(kernel, c, options());
  if (rep.baseline) fuzz::note_routing(r, rep.baseline->routing);  // the kernel's own decisions
  for (const Verdict& v : rep.verdicts) {
    const uint32_t i = registry_index(v.invariant);
    fuzz::note(fuzz::Feature::kOutcome, i * 4 + static_cast<uint32_t>(v.outcome));
    if (v.outcome == Outcome::kPass) fuzz::note_ratio(i, v.max_ratio);
  }
  if (rep.failed()) fuzz::report_finding(r, rep.first_failure(), fuzz::target_kernel_name());
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  return moefuzz::fuzz::mutate_bytes(data, size, max_size, seed, moefuzz::fuzz::layer_limits());
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                                            uint8_t* out, size_t max_out, unsigned seed) {
  return moefuzz::fuzz::cross_bytes(a, a_size, b, b_size, out, max_out, seed, moefuzz::fuzz::layer_limits());
}

// The stage a finding blames is the first stage of the kernel whose output is inadmissible given its
// own inputs: when a kernel's FC2 codes are inadmissible and its own GEMM1 values are already
// outside their bounds (in a composed pipeline the FC2 quantization may be moefuzz's, computed from
// the user's GEMM1), the oracle names gemm1; when GEMM1 holds, it names fc2_quant.
#include <gtest/gtest.h>

#include "core/case.h"
#include "core/profile.h"
#include "kernels/canary.h"
#include "kernels/registry.h"
#include "oracles/oracle.h"

namespace moefuzz {
namespace {

LayerResult cpu_run(const Case& c) { return run_guarded(*make_kernel("cpu"), c, RunOptions{}).result; }

// Every FC2 code of row 0 set to the largest magnitude: outside any admissible quantization of a
// small activation.
void corrupt_fc2_codes(LayerResult& r) {
  ASSERT_TRUE(r.fc2_input.has_value());
  const int64_t bytes_per_row = r.fc2_input->cols / 2;
  for (int64_t i = 0; i < bytes_per_row; ++i) r.fc2_input->packed[static_cast<size_t>(i)] = 0x77;  // +6, +6
}

TEST(StageBlame, Fc2InputFedByABrokenGemm1BlamesGemm1) {
  CaseRecipe rcp;
  rcp.seed = 3;
  const Case c = materialize(rcp);
  const Profile& p = profile_by_name(make_kernel("cpu")->profile());
  LayerResult r = cpu_run(c);
  ASSERT_TRUE(r.gemm1.has_value());
  ASSERT_TRUE(evaluate(c, p, r).admissibility.passed());

  LayerResult fc2_only = r;
  corrupt_fc2_codes(fc2_only);
  const OracleEvaluation a = evaluate(c, p, fc2_only);
  ASSERT_TRUE(a.admissibility.failed());
  EXPECT_EQ(a.admissibility.stage, "fc2_quant") << a.admissibility.message;

  LayerResult both = fc2_only;
  for (float& v : *both.gemm1) v *= 4;  // GEMM1 off by 4x: far outside its bound
  const OracleEvaluation b = evaluate(c, p, both);
  ASSERT_TRUE(b.admissibility.failed());
  EXPECT_EQ(b.admissibility.stage, "gemm1") << b.admissibility.message;
}

}  // namespace
}  // namespace moefuzz

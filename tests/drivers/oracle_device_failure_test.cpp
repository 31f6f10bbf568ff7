// A failure of the oracle's dot device (oracles/exact_dot_device.h; a CUDA error of the GPU dots) is
// moefuzz's own failure: check_case lets the ToolError through (the CLI exits 2), it never becomes a
// finding of the kernel. Runs on the CPU with a device that always fails.
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "core/case.h"
#include "core/errors.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "oracles/exact_dot_device.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

class FailingDevice final : public ExactDotDevice {
 public:
  std::string name() const override { return "failing"; }
  void dots(const DecodedNvfp4&, int64_t, std::span<const DeviceWeights>, RoundedDot*,
            const DotFlips*) override {
    ++calls;
    throw ToolError("GPU exact dots: kernel launch failed: cudaErrorLaunchFailure (test)");
  }
  int calls = 0;
};

TEST(OracleDeviceFailure, IsAToolErrorNeverAFindingOfTheKernel) {
  const auto kernel = make_kernel("cpu");
  CaseRecipe r = gen::sample(gen::recipe_for("small"), /*seed=*/3, /*index=*/5, 60);
  r.quant.activations = ActivationFormat::kNvfp4;  // the GEMM dots go through the device
  r.profile = kernel->profile();
  ASSERT_EQ(kernel->supports(r), "");
  const Case c = materialize(r);
  FailingDevice device;
  const ScopedExactDotDevice on(&device);
  const CheckOptions options{.invariants = select_invariants("ORACLE")};
  EXPECT_THROW(check_case(*kernel, c, options), ToolError);
  EXPECT_GT(device.calls, 0) << "the oracle asked the device for its dots";
}

}  // namespace
}  // namespace moefuzz

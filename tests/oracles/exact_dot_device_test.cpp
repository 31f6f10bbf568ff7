// The dot-device seam of the oracle's GEMM stages (oracles/exact_dot_device.h), on the CPU: a device
// that computes with exact_dot_rows stands in for the GPU. What `--oracle-device auto` picks and when,
// which calls a device's smallest call keeps on the CPU, the content keys the stages name the case's
// weights by, and that an evaluation through a device equals the CPU's bit for bit.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "core/case.h"
#include "core/cuda_in_process.h"
#include "core/profile.h"
#include "kernels/registry.h"
#include "oracles/exact_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/layer_ref.h"
#include "oracles/routing_ref.h"
#include "oracles/stages/gemm_bounds.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

// exact_dot_rows behind the device interface; records what each call named.
class CpuDotDevice final : public ExactDotDevice {
 public:
  explicit CpuDotDevice(int64_t smallest = 0) : smallest_(smallest) {}
  std::string name() const override { return "cpu-as-device"; }
  int64_t smallest_call() const override { return smallest_; }
  void dots(const DecodedNvfp4& a, int64_t rows, std::span<const DeviceWeights> weights, RoundedDot* out,
            const DotFlips* flips) override {
    ++calls;
    with_flips += flips != nullptr ? 1 : 0;
    double* flip_out = flips != nullptr ? flips->out : nullptr;
    for (const DeviceWeights& w : weights) {
      (w.content ? named : unnamed)++;
      if (w.content) contents.push_back(*w.content);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < w.matrix->rows; ++o) {
          ExactDot d;
          const PackedNvfp4Row row = packed_row(*w.matrix, o);
          exact_dot_rows(a, r, 1, row, &d);
          *out++ = RoundedDot::of(d);
          if (flip_out != nullptr) *flip_out++ = stages::flip_sum(flips->rows[static_cast<size_t>(r)], row);
        }
    }
  }
  int64_t smallest_;
  int calls = 0, named = 0, unnamed = 0, with_flips = 0;
  std::vector<Hash128> contents;
};

bool same_stages(const LayerReference& a, const LayerReference& b) {
  if (a.admissibility.message != b.admissibility.message || a.stages.size() != b.stages.size()) return false;
  for (size_t s = 0; s < a.stages.size(); ++s) {
    const auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
      return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * 8) == 0);
    };
    if (!same(a.stages[s].expected, b.stages[s].expected) || !same(a.stages[s].bound, b.stages[s].bound))
      return false;
  }
  return true;
}

// A medium W4A4 case whose every expert gets rows (so both GEMM stages call the device).
Case w4a4_case() {
  CaseRecipe r = gen::sample(gen::recipe_for("medium"), /*seed=*/11, /*index=*/3, 50);
  r.quant.activations = ActivationFormat::kNvfp4;
  r.quant.weights = WeightFormat::kNvfp4;
  r.profile = "flashinfer-reference";
  return materialize(r);
}

TEST(ExactDotDevice, SmallestCallKeepsSmallCallsOnTheCpu) {
  const CpuDotDevice d(100);
  EXPECT_FALSE(use_dot_device(nullptr, 1000));
  EXPECT_FALSE(use_dot_device(&d, 0));
  EXPECT_FALSE(use_dot_device(&d, 99));
  EXPECT_TRUE(use_dot_device(&d, 100));
}

TEST(ExactDotDevice, EvaluationThroughADeviceEqualsTheCpuAndNamesTheCasesWeightsByContent) {
  const Case c = w4a4_case();
  const Profile& p = profile_by_name(c.recipe.profile);
  const RoutingDecision routing = reference_routing(c, p);
  const LayerReference cpu = reference_layer(c, p, routing, nullptr);
  ASSERT_TRUE(cpu.admissibility.passed()) << cpu.admissibility.message;

  CpuDotDevice every(0), none(int64_t{1} << 62);
  LayerReference on_every, on_none;
  {
    ScopedExactDotDevice on(&every);
    on_every = reference_layer(c, p, routing, nullptr);
  }
  {
    ScopedExactDotDevice on(&none);
    on_none = reference_layer(c, p, routing, nullptr);
  }
  EXPECT_TRUE(same_stages(cpu, on_every));
  EXPECT_TRUE(same_stages(cpu, on_none));
  EXPECT_GT(every.calls, 0);
  EXPECT_EQ(none.calls, 0) << "a call below the smallest call stays on the CPU";
  // The flip sums go to the device with the dots where it can repeat the CPU's order and a row flips
  // (the unconditioned FC2 input's do; a call whose rows flip nothing asks for none: each sum is +0).
  if (weighted_abs_sum_rows_is_fused())
    EXPECT_GT(every.with_flips, 0);
  else
    EXPECT_EQ(every.with_flips, 0);
  EXPECT_LE(every.with_flips, every.calls);
  // Every matrix the stages hand over is the case's own and is named: gate, up and down of one expert
  // by three different keys, the same content by the same key in a second evaluation.
  EXPECT_EQ(every.unnamed, 0);
  EXPECT_EQ(every.named, 3 * every.calls / 2);
  const std::vector<Hash128> first = every.contents;
  every.contents.clear();
  {
    ScopedExactDotDevice on(&every);
    (void)reference_layer(c, p, routing, nullptr);
  }
  EXPECT_EQ(every.contents, first);
  for (size_t i = 0; i + 1 < first.size(); i += 3) {
    EXPECT_FALSE(first[i] == first[i + 1]);
    EXPECT_FALSE(first[i + 1] == first[i + 2]);
  }
}

// A conditioned evaluation (on a kernel's own codes) flips nothing in the rows the kernel exposes: the
// device computes their dots alone (no flip sums asked for, each +0) and the stages equal the CPU's
// bit for bit. (Rows a kernel does not expose, a separate shared expert's, still flip.)
TEST(ExactDotDevice, ConditionedEvaluationAsksForNoFlipsAndEqualsTheCpu) {
  const Case c = w4a4_case();
  const std::unique_ptr<Kernel> k = make_kernel("cpu-flashinfer");
  ASSERT_EQ(k->supports(c.recipe), "");
  const Profile& p = profile_by_name(k->profile());
  LayerResult kernel;
  k->run_layer(c, RunOptions{.intermediates = true}, kernel);
  ASSERT_TRUE(kernel.fc1_input.has_value() && kernel.fc2_input.has_value());
  const LayerReference cpu = reference_layer(c, p, kernel.routing, &kernel);
  ASSERT_TRUE(cpu.admissibility.passed()) << cpu.admissibility.message;
  CpuDotDevice every(0);
  LayerReference on_every;
  {
    ScopedExactDotDevice on(&every);
    on_every = reference_layer(c, p, kernel.routing, &kernel);
  }
  EXPECT_TRUE(same_stages(cpu, on_every));
  EXPECT_GT(every.calls, 0);
  EXPECT_LT(every.with_flips, every.calls / 2) << "most calls ask for no flips";
}

// `--oracle-device auto`: nothing until a kernel running on a GPU in this process was made (CUDA is
// never initialized for the oracle alone), then the maker's device, made once for all threads; the
// process-wide device and a thread's override win over it. One test: the mark cannot be undone.
TEST(ExactDotDevice, AutoUsesTheDeviceOnlyOnceAGpuKernelIsInTheProcess) {
  ASSERT_FALSE(gpu_kernel_in_process()) << "this test binary must not have made a GPU kernel";
  std::atomic<int> made{0};
  auto device = std::make_shared<CpuDotDevice>();
  set_exact_dot_device_for_gpu_kernels([&]() -> std::shared_ptr<ExactDotDevice> {
    ++made;
    return device;
  });
  EXPECT_EQ(exact_dot_device(), nullptr);
  EXPECT_EQ(made.load(), 0);

  mark_gpu_kernel_in_process();
  EXPECT_TRUE(gpu_kernel_in_process());
  std::vector<std::thread> threads;
  std::atomic<int> got_device{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] { got_device += exact_dot_device() == device.get() ? 1 : 0; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(got_device.load(), 8);
  EXPECT_EQ(made.load(), 1);
  {
    ScopedExactDotDevice cpu(nullptr);
    EXPECT_EQ(exact_dot_device(), nullptr);
  }
  auto other = std::make_shared<CpuDotDevice>();
  set_exact_dot_device(other);
  EXPECT_EQ(exact_dot_device(), other.get());
  set_exact_dot_device(nullptr);
  EXPECT_EQ(exact_dot_device(), device.get());

  // A maker that finds no usable GPU: the CPU.
  set_exact_dot_device_for_gpu_kernels([]() -> std::shared_ptr<ExactDotDevice> { return nullptr; });
  EXPECT_EQ(exact_dot_device(), nullptr);
  set_exact_dot_device_for_gpu_kernels(nullptr);
  EXPECT_EQ(exact_dot_device(), nullptr);
}

}  // namespace
}  // namespace moefuzz

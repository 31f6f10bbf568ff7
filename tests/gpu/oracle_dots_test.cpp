// The oracle with its W4A4 GEMM dots on the GPU (oracles/gpu/gpu_exact_dots.h) against the CPU
// oracle, bit for bit: the device dots against exact_dot_rows on hostile scales, and every stage's
// expected value and bound of the full oracle on every golden layer case (conditioned on the golden
// codes and not) and on MOEFUZZ_GPU_ORACLE_CASES (default 10^4) generated cases, small and medium,
// W4A4 and W4A16, under the three CPU kernels' profiles. Skips visibly without a GPU (CI has none);
// `scripts/gpu-host.sh tests` turns a skip into a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/case.h"
#include "core/errors.h"
#include "core/profile.h"
#include "kernels/registry.h"
#include "oracles/exact_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/gpu/gpu_exact_dots.h"
#include "oracles/layer_ref.h"
#include "oracles/oracle.h"
#include "oracles/routing_ref.h"
#include "oracles/stages/gemm_bounds.h"
#include "properties/gen/recipe_gen.h"
#include "support/hostile_nvfp4.h"
#include "support/layer_golden_cases.h"

namespace moefuzz {
namespace {

std::shared_ptr<ExactDotDevice> gpu_or_skip_reason(std::string& why) {
  if (!gpu::gpu_exact_dots_available(&why)) return nullptr;
  return gpu::make_gpu_exact_dots();
}
#define REQUIRE_GPU(dev)                                                \
  std::string why_;                                                     \
  const std::shared_ptr<ExactDotDevice> dev = gpu_or_skip_reason(why_); \
  if (!dev) GTEST_SKIP() << "no CUDA GPU present: " << why_;

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Empty when both evaluations agree bit for bit; else what differs first.
std::string difference(const Verdict& va, const std::vector<StageExpectation>& a, const Verdict& vb,
                       const std::vector<StageExpectation>& b) {
  if (va.passed() != vb.passed() || va.message != vb.message)
    return "admissibility differs: '" + va.message + "' vs '" + vb.message + "'";
  if (a.size() != b.size()) return "stage counts differ";
  for (size_t s = 0; s < a.size(); ++s) {
    if (a[s].stage != b[s].stage || a[s].rows != b[s].rows || a[s].cols != b[s].cols)
      return "stage " + a[s].stage + " shape differs";
    if (!same_bits(a[s].expected, b[s].expected)) return "stage " + a[s].stage + " expected values differ";
    if (!same_bits(a[s].bound, b[s].bound)) return "stage " + a[s].stage + " bounds differ";
  }
  return "";
}

TEST(GpuOracle, DeviceDotsEqualExactDotRowsOnHostileScales) {
  REQUIRE_GPU(dev);
  ASSERT_TRUE(weighted_abs_sum_rows_is_fused()) << "the device's flip sums repeat the AVX2 + FMA loop";
  int64_t pairs = 0, nan_pairs = 0, flip_pairs = 0;
  for (int64_t cols : {16, 48, 144, 2048, 2064, 7168}) {
    const Nvfp4Matrix am = test::hostile_matrix(13, cols, 100 + cols);
    const DecodedNvfp4 a = DecodedNvfp4::from_matrix(am);
    const Nvfp4Matrix w1 = test::hostile_matrix(37, cols, 200 + cols),
                      w2 = test::hostile_matrix(5, cols, 300 + cols);
    // Named matrices stay on the device (the second call finds them), unnamed ones go up each call;
    // five matrices take two launches (at most four each).
    const Hash128 k1{static_cast<uint64_t>(cols), 1}, k2{static_cast<uint64_t>(cols), 2};
    const DeviceWeights ws[5] = {{&w1, k1}, {&w2, std::nullopt}, {&w1, k1}, {&w2, k2}, {&w1, std::nullopt}};
    const std::vector<FlipList> flip_lists = test::hostile_flips(a.rows(), cols, 400 + cols);
    for (int round = 0; round < 2; ++round)                      // the second round with flip sums
      for (int64_t rows : {int64_t{1}, int64_t{9}, a.rows()}) {  // fewer rows than the table holds, too
        int64_t total = 0;
        for (const DeviceWeights& w : ws) total += rows * w.matrix->rows;
        std::vector<RoundedDot> got(static_cast<size_t>(total));
        std::vector<double> got_flips(static_cast<size_t>(total), -1.0);
        const DotFlips flips{.rows = std::span<const FlipList>(flip_lists.data(), static_cast<size_t>(rows)),
                             .out = got_flips.data()};
        dev->dots(a, rows, ws, got.data(), round == 1 ? &flips : nullptr);
        int64_t base = 0;
        for (const DeviceWeights& dw : ws) {
          const Nvfp4Matrix& w = *dw.matrix;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < w.rows; ++o) {
              ExactDot ref;
              exact_dot_rows(a, r, 1, packed_row(w, o), &ref);
              const RoundedDot want = RoundedDot::of(ref),
                               g = got[static_cast<size_t>(base + r * w.rows + o)];
              ASSERT_TRUE(std::memcmp(&g, &want, sizeof g) == 0)
                  << "cols " << cols << " rows " << rows << " row " << r << " x weight row " << o << ": got "
                  << g.value << " / " << g.abs_value << ", want " << want.value << " / " << want.abs_value;
              ++pairs;
              nan_pairs += ref.nan;
              if (round == 1) {
                const double fw = stages::flip_sum(flip_lists[static_cast<size_t>(r)], packed_row(w, o)),
                             fg = got_flips[static_cast<size_t>(base + r * w.rows + o)];
                ASSERT_TRUE((std::isnan(fw) && std::isnan(fg)) || std::memcmp(&fw, &fg, sizeof fw) == 0)
                    << "flip sum, cols " << cols << " rows " << rows << " row " << r << " x weight row " << o
                    << ": got " << fg << ", want " << fw;
                ++flip_pairs;
              }
            }
          base += rows * w.rows;
        }
      }
  }
  EXPECT_GT(nan_pairs, 0);
  EXPECT_LT(nan_pairs, pairs);  // both kinds compared
  std::printf(
      "gpu-oracle: %lld device dots equal exact_dot_rows, rounded (%lld with a NaN scale); %lld flip sums "
      "equal the CPU's\n",
      static_cast<long long>(pairs), static_cast<long long>(nan_pairs), static_cast<long long>(flip_pairs));
}

TEST(GpuOracle, GoldenLayerCasesAreBitIdentical) {
  REQUIRE_GPU(dev);
  const Profile& p = profile_by_name("flashinfer-reference");
  int compared = 0;
  for (const golden::GoldenCase& g : golden::load_all())
    for (bool conditioned : {true, false}) {
      LayerResult k = g.kernel;
      if (!conditioned) {
        k.fc1_input.reset();
        k.fc2_input.reset();
      }
      // reference_layer on the golden routing, as tests/oracles/layer_golden_test.cpp replays it (the
      // golden cases carry no router logits, so evaluate()'s routing check does not apply).
      LayerReference cpu, gpu_ev;
      {
        ScopedExactDotDevice on(nullptr);
        cpu = reference_layer(g.c, p, g.routing, &k);
      }
      {
        ScopedExactDotDevice on(dev.get());
        gpu_ev = reference_layer(g.c, p, g.routing, &k);
      }
      ASSERT_TRUE(cpu.admissibility.passed()) << g.id << ": the golden run is admissible";
      EXPECT_EQ(difference(cpu.admissibility, cpu.stages, gpu_ev.admissibility, gpu_ev.stages), "")
          << g.id << (conditioned ? " (conditioned)" : " (unconditioned)");
      ++compared;
    }
  EXPECT_GE(compared, static_cast<int>(2 * kMinLayerGoldenCases));
  std::printf("gpu-oracle: %d golden evaluations bit-identical\n", compared);
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// Case `index`: every 8th from the medium class, the rest small; the profile of one of the three
// CPU kernels; every 4th small case run through that kernel and evaluated conditioned on its
// exposed codes (oracles/oracle.h evaluate), the others on the reference routing unconditioned.
TEST(GpuOracle, GeneratedCasesAreBitIdentical) {
  REQUIRE_GPU(dev);
  const uint64_t n = env_or("MOEFUZZ_GPU_ORACLE_CASES", 10000), seed = env_or("MOEFUZZ_GPU_SEED", 1);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const auto small = gen::recipe_for("small"), medium = gen::recipe_for("medium");
  const char* const kernels[3] = {"cpu", "cpu-flashinfer", "cpu-trtllm"};
  std::atomic<uint64_t> next{0}, compared{0}, w4a4{0}, w4a16{0}, conditioned{0}, declined{0}, inadmissible{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  const auto worker = [&] {
    std::vector<std::unique_ptr<Kernel>> ks;
    for (const char* name : kernels) ks.push_back(make_kernel(name));
    for (uint64_t i = next++; i < n; i = next++) {
      const bool is_medium = i % 8 == 0;
      const Kernel& kernel = *ks[i % 3];
      CaseRecipe r = gen::sample(is_medium ? medium : small, seed, i,
                                 static_cast<int>(std::min<uint64_t>(100, i % 101)));
      r.profile = kernel.profile();
      const Profile& p = profile_by_name(r.profile);
      const bool run_kernel = !is_medium && i % 4 == 1;
      if (run_kernel && !kernel.supports(r).empty()) {
        ++declined;
        continue;
      }
      Verdict va, vb;
      std::vector<StageExpectation> a, b;
      try {
        Case c;
        try {
          c = materialize(r);
        } catch (const InputError&) {  // a draw this build refuses to materialize: not an oracle case
          ++declined;
          continue;
        }
        LayerResult res;
        if (run_kernel) {
          kernel.run_layer(c, RunOptions{}, res);
        } else {
          res.routing = reference_routing(c, p);
        }
        const auto eval = [&](ExactDotDevice* d, Verdict& v, std::vector<StageExpectation>& st) {
          ScopedExactDotDevice on(d);
          if (run_kernel) {
            OracleEvaluation ev = evaluate(c, p, res);
            v = ev.admissibility;
            st = std::move(ev.stages);
          } else {
            LayerReference ref = reference_layer(c, p, res.routing, nullptr);
            v = ref.admissibility;
            st = std::move(ref.stages);
          }
        };
        eval(nullptr, va, a);
        eval(dev.get(), vb, b);
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(failures_mutex);
        failures.push_back("case " + std::to_string(i) + " (" + kernel.name() + "): exception: " + e.what());
        continue;
      }
      if (const std::string d = difference(va, a, vb, b); !d.empty()) {
        const std::lock_guard<std::mutex> lock(failures_mutex);
        failures.push_back("case " + std::to_string(i) + " (" + kernel.name() + "): " + d);
      }
      if (const uint64_t done = ++compared; done % 1000 == 0) {  // progress, for a run cut short
        std::printf("gpu-oracle: %llu cases compared\n", static_cast<unsigned long long>(done));
        std::fflush(stdout);
      }
      if (!va.passed()) ++inadmissible;
      (r.quant.activations == ActivationFormat::kBf16 ? w4a16 : w4a4)++;
      conditioned += run_kernel;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (size_t f = 0; f < std::min<size_t>(failures.size(), 20); ++f) ADD_FAILURE() << failures[f];
  EXPECT_TRUE(failures.empty()) << failures.size() << " cases differ";
  // Not vacuous: most cases compared, both activation formats, admissible W4A4 GEMMs among them.
  EXPECT_GE(compared.load() + declined.load(), n);
  EXPECT_GT(w4a4.load(), compared.load() / 4);
  EXPECT_GT(w4a16.load(), compared.load() / 10);
  EXPECT_GT(conditioned.load(), compared.load() / 10);
  EXPECT_LT(inadmissible.load(), compared.load() / 10);
  std::printf(
      "gpu-oracle: %llu generated cases bit-identical (%llu W4A4, %llu W4A16; %llu conditioned on a CPU "
      "kernel's codes, %llu inadmissible, %llu declined by the kernel), %u threads\n",
      static_cast<unsigned long long>(compared.load()), static_cast<unsigned long long>(w4a4.load()),
      static_cast<unsigned long long>(w4a16.load()), static_cast<unsigned long long>(conditioned.load()),
      static_cast<unsigned long long>(inadmissible.load()), static_cast<unsigned long long>(declined.load()),
      threads);
}

}  // namespace
}  // namespace moefuzz

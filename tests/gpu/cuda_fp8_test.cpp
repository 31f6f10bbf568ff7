// The `cuda-fp8` kernel (FP8 block W8A8 on FP8 tensor cores, kernels/cuda/cuda_fp8_kernel.h) on a
// GPU; skips visibly without one (CI has none):
//  * the device quantizer (kernels/cuda/fp8_group_quant.cuh) bit for bit against the host's
//    (core/fp8_group_quant.h, vLLM CUDA variant) on hostile groups, with and without UE8M0 scales;
//  * the device GEMM's fp32 accumulator (kernels/cuda/fp8_block_gemm.cu) within the oracle's derived
//    bound (oracles/fp8_block_gemm.h, the `vllm` profile's contract) on random and hostile blocks;
//  * the layer through the project's check engine: campaigns of FP8 cases with every cheap
//    invariant, zero findings, ORACLE comparing every case and passing most of them non-vacuously
//    (see expect_clean);
//  * the mutant that drops the activation scale is killed by ORACLE.
// Knobs: MOEFUZZ_GPU_FP8_CASES=N (small-shape campaign cases, default 300), MOEFUZZ_GPU_FP8_MEDIUM_CASES=N
// (medium shapes, default 20), MOEFUZZ_GPU_SEED=S (default 1).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/e4m3.h"
#include "core/fp8_group_quant.h"
#include "core/profile.h"
#include "drivers/campaign.h"
#include "kernels/registry.h"
#include "oracles/fp8_block_dot.h"
#include "oracles/fp8_block_gemm.h"
#include "properties/invariant.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/fp8_device_stages.h"
#include "kernels/cuda/moe_pipeline.h"
#include "support/require_gpu.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaFp8, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda-fp8 kernel is not compiled";
}
#else
namespace moefuzz {
namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

constexpr int64_t kGroup = 128;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Groups of 128 that stress every branch of the vLLM formula: zero and signed-zero groups (the 1e-10
// seed), amax exactly 448 (s = 1) and past it, amax at and around the seed, fp32 subnormals, NaN
// (dropped by fmaxf, then -448), +-Inf (s = Inf), E4M3 ties after the division, random magnitudes.
std::vector<std::vector<float> > hostile_groups() {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 127);
  const auto random_group = [&](float scale) {
    std::vector<float> g(kGroup);
    for (float& v : g) v = normal(rng) * scale;
    return g;
  };
  std::vector<std::vector<float> > out;
  out.push_back(std::vector<float>(kGroup, 0.0f));
  out.push_back(std::vector<float>(kGroup, -0.0f));
  for (float amax : {448.0f, -448.0f, 464.0f, 1000.0f, 65504.0f, 3e38f, std::numeric_limits<float>::max(),
                     1e-10f, 9e-11f, 1.1e-10f, 1e-12f, 1e-30f, 1e-38f, 1e-40f, 1e-45f, 0.5f, 1.0f, 3.0f}) {
    std::vector<float> g = random_group(std::fabs(amax) / 8.0f);
    for (float& v : g) v = std::fmin(std::fmax(v, -std::fabs(amax)), std::fabs(amax));
    g[37] = amax;
    out.push_back(g);
  }
  // s = 1: values on E4M3 rounding ties (1.0625 -> 1, 17 -> 16, 2^-10 -> 0, 3 * 2^-10 -> 2^-8) and the
  // saturation edge.
  {
    std::vector<float> g(kGroup, 0.0f);
    const float ties[] = {448.0f,       1.0625f,   1.1875f, 17.0f,  0x1p-10f,
                          3 * 0x1p-10f, -0x1p-10f, 440.0f,  447.0f, 0x1p-9f};
    for (size_t i = 0; i < kGroup; ++i)
      g[i] = ties[i % std::size(ties)] * ((i / std::size(ties)) % 2 ? -1.0f : 1.0f);
    out.push_back(g);
  }
  for (float special : {kNaN, -kNaN, kInf, -kInf}) {
    std::vector<float> g = random_group(2.0f);
    g[5] = special;
    out.push_back(g);
  }
  {
    std::vector<float> g = random_group(2.0f);
    g[0] = kInf;
    g[1] = kNaN;
    out.push_back(g);
    out.push_back(std::vector<float>(kGroup, kNaN));
  }
  for (int i = 0; i < 24; ++i) out.push_back(random_group(std::ldexp(1.0f, i - 12)));
  for (int i = 0; i < 8; ++i) {  // every element its own magnitude, subnormals included
    std::vector<float> g(kGroup);
    for (float& v : g) v = std::ldexp(normal(rng), exponent(rng));
    out.push_back(g);
  }
  return out;
}

bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

TEST(CudaFp8Quantizer, BitIdenticalToHostOnHostileGroups) {
  MOEFUZZ_REQUIRE_GPU();
  const std::vector<std::vector<float> > groups = hostile_groups();
  // Two groups a row, so the row and group indexing is exercised too.
  const int64_t rows = static_cast<int64_t>((groups.size() + 1) / 2), cols = 2 * kGroup;
  std::vector<float> x(static_cast<size_t>(rows * cols), 0.0f);
  for (size_t g = 0; g < groups.size(); ++g)
    std::copy(groups[g].begin(), groups[g].end(), x.begin() + g * kGroup);
  int64_t compared = 0, scale_mismatches = 0, code_mismatches = 0;
  for (bool ue8m0 : {false, true}) {
    const Fp8GroupQuantized host = quantize_fp8_per_token_group(
        x, rows, cols, {.ue8m0 = ue8m0, .variant = Fp8GroupQuantVariant::kVllmCuda});
    const Fp8GroupQuantized dev = cuda::quantize_fp8_groups_on_device(x, rows, cols, ue8m0);
    ASSERT_EQ(dev.codes.size(), host.codes.size());
    ASSERT_EQ(dev.scales.size(), host.scales.size());
    for (size_t g = 0; g < host.scales.size(); ++g) {
      if (!same_bits(dev.scales[g], host.scales[g]) && ++scale_mismatches <= 5)
        ADD_FAILURE() << "group " << g << (ue8m0 ? " (ue8m0)" : "") << ": device scale " << dev.scales[g]
                      << ", host " << host.scales[g];
      for (int64_t i = 0; i < kGroup; ++i) {
        const size_t at = g * kGroup + static_cast<size_t>(i);
        if (dev.codes[at] != host.codes[at] && ++code_mismatches <= 5)
          ADD_FAILURE() << "group " << g << " element " << i << (ue8m0 ? " (ue8m0)" : "") << ": x = " << x[at]
                        << ", device code " << int{dev.codes[at]} << ", host " << int{host.codes[at]};
      }
      ++compared;
    }
  }
  EXPECT_EQ(scale_mismatches, 0);
  EXPECT_EQ(code_mismatches, 0);
  std::cout << "[cuda-fp8 quantizer] " << compared << " groups (" << groups.size()
            << " hostile ones padded to whole rows, x {fp32, ue8m0} scales) compared bit for bit with "
               "core/fp8_group_quant.h: "
            << scale_mismatches << " scale and " << code_mismatches << " code mismatches\n";
  EXPECT_EQ(compared, 2 * rows * 2);
}

struct GemmOperands {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint8_t> a, w;  // [m, k], [n, k]
  std::vector<float> sa, sw;  // [m, k/128], [n/128, k/128]
};

// E4M3 codes other than NaN (0x7F, 0xFF: the bound says nothing there).
uint8_t finite_code(std::mt19937& rng) {
  for (;;) {
    const uint8_t c = static_cast<uint8_t>(rng() & 0xFF);
    if ((c & 0x7F) != 0x7F) return c;
  }
}

GemmOperands random_operands(std::mt19937& rng, int64_t m, int64_t n, int64_t k, int flavour) {
  GemmOperands o{m, n, k};
  o.a.resize(static_cast<size_t>(m * k));
  o.w.resize(static_cast<size_t>(n * k));
  o.sa.resize(static_cast<size_t>(m * (k / 128)));
  o.sw.resize(static_cast<size_t>((n / 128) * (k / 128)));
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  std::uniform_int_distribution<int> e(-20, 10);
  for (auto& c : o.a) c = finite_code(rng);
  for (auto& c : o.w) c = finite_code(rng);
  for (float& s : o.sa) s = u(rng) * std::ldexp(1.0f, e(rng));
  for (float& s : o.sw) s = u(rng) * std::ldexp(1.0f, e(rng));
  switch (flavour) {
    case 1:  // saturated: every code +-448, products at their largest
      for (auto& c : o.a) c = static_cast<uint8_t>((c & 0x80) | kE4m3MaxCode);
      for (auto& c : o.w) c = static_cast<uint8_t>((c & 0x80) | kE4m3MaxCode);
      break;
    case 2:  // cancellation: +448 / -448 pairs swamp small products (the accumulator's lost bits)
      for (int64_t i = 0; i < m * k; ++i)
        if (i % 16 == 0) o.a[static_cast<size_t>(i)] = (i / 16) % 2 ? 0xFE : 0x7E;
      for (int64_t i = 0; i < n * k; ++i)
        if (i % 16 == 0) o.w[static_cast<size_t>(i)] = 0x7E;
      break;
    case 3:  // subnormal codes only (|v| <= 7 * 2^-9)
      for (auto& c : o.a) c &= 0x87;
      for (auto& c : o.w) c &= 0x87;
      break;
    case 4:  // zero blocks in A and W, power-of-two (UE8M0) scales
      for (int64_t i = 0; i < m * k; ++i)
        if ((i % k) / 128 == 1) o.a[static_cast<size_t>(i)] = 0;
      for (int64_t i = 0; i < n * k; ++i)
        if ((i / k) / 128 == 0 && (i % k) / 128 == 2) o.w[static_cast<size_t>(i)] = 0x80;
      for (float& s : o.sa) s = std::ldexp(1.0f, e(rng));
      for (float& s : o.sw) s = std::ldexp(1.0f, e(rng));
      break;
    case 5:  // underflowing scales: fl(P * sa) and fl(. * sb) in the fp32 subnormal range
      for (float& s : o.sa) s = std::ldexp(u(rng), -70);
      for (float& s : o.sw) s = std::ldexp(u(rng), -75);
      break;
    case 6:  // zero activation scales (padding rows' scale) and huge weight scales
      for (size_t i = 0; i < o.sa.size(); i += 3) o.sa[i] = 0.0f;
      for (float& s : o.sw) s = std::ldexp(u(rng), 60);
      break;
    case 7: {  // exact: codes 0, +-1, +-2 and one power-of-two scale per row and per matrix, so every
               // partial sum is a small integer times sa * sb, which any accumulator of >= 9 bits holds
      const uint8_t small[] = {0x00, 0x38, 0xB8, 0x40, 0xC0};
      for (auto& c : o.a) c = small[rng() % 5];
      for (auto& c : o.w) c = small[rng() % 5];
      const float sb = std::ldexp(1.0f, e(rng));
      for (float& s : o.sw) s = sb;
      for (int64_t r = 0; r < m; ++r) {
        const float sa = std::ldexp(1.0f, e(rng));
        for (int64_t b = 0; b < k / 128; ++b) o.sa[static_cast<size_t>(r * (k / 128) + b)] = sa;
      }
      break;
    }
    default:
      break;
  }
  return o;
}

TEST(CudaFp8Gemm, AccumulatorWithinOracleBoundOnRandomAndHostileBlocks) {
  MOEFUZZ_REQUIRE_GPU();
  const Profile& vllm = profile_by_name("vllm");
  const Fp8BlockGemmContract contract{.mma_accum_mantissa_bits = vllm.fp8_mma_accum_bits,
                                      .dots_per_block = vllm.fp8_dots_per_block};
  std::mt19937 rng(5);
  const char* names[] = {"random",
                         "saturated",
                         "cancellation",
                         "subnormal",
                         "zero blocks + pow2 scales",
                         "underflowing scales",
                         "zero / huge scales",
                         "exact (small integers, one pow2 scale per row)"};
  // Printed, not asserted: how many elements an fp32 round-to-nearest accumulator contract would reject
  // (mma.sync keeps 23 bits on an H200, fp8_mma_probe_test.cpp; the profile's 13 are wgmma's).
  const Fp8BlockGemmContract fp32_rn{.mma_accum_mantissa_bits = kFp32RoundToNearestAccumBits,
                                     .dots_per_block = 2};
  int64_t beyond_fp32_rn = 0;
  int64_t checked = 0, said_nothing = 0, exact = 0, violations = 0;  // the first 5 violations are shown
  int64_t inexact = 0;  // elements of the exact flavour that differ from the exact value at all
  for (int flavour = 0; flavour < 8; ++flavour) {
    // m = 20: a second, partly padded 16-row tile; n = 256: two weight scale blocks; k = 512: 4 blocks.
    const GemmOperands o = random_operands(rng, 20, 256, 512, flavour);
    const std::vector<float> got = cuda::fp8_block_gemm_on_device(o.a, o.sa, o.w, o.sw, o.m, o.n, o.k);
    ASSERT_EQ(got.size(), static_cast<size_t>(o.m * o.n));
    const DecodedFp8 a = DecodedFp8::from_codes(o.m, o.k, o.a);
    const int64_t kb = o.k / 128;
    double worst = 0;
    Fp8BlockDot d;
    for (int64_t r = 0; r < o.m; ++r)
      for (int64_t c = 0; c < o.n; ++c) {
        fp8_block_dot_rows(a, r, 1, Fp8Row{o.w.data() + c * o.k, o.k}, &d);
        std::vector<float> sb(o.sw.begin() + (c / 128) * kb, o.sw.begin() + (c / 128 + 1) * kb);
        std::vector<float> sa(o.sa.begin() + r * kb, o.sa.begin() + (r + 1) * kb);
        const Fp8GemmBound e = fp8_block_gemm_element(d, sa, sb, contract);
        if (e.says_nothing()) {
          ++said_nothing;
          continue;
        }
        const double v = got[static_cast<size_t>(r * o.n + c)];
        const double err = std::fabs(v - e.expected);
        ++checked;
        exact += err == 0;
        if (flavour == 7 && err != 0 && ++inexact <= 5)
          ADD_FAILURE() << names[flavour] << ": out[" << r << ", " << c << "] = " << v << ", exactly "
                        << e.expected << " (fragment layout or scale indexing)";
        if (e.bound > 0) worst = std::max(worst, err / e.bound);
        beyond_fp32_rn += err > fp8_block_gemm_element(d, sa, sb, fp32_rn).bound;
        if (!(err <= e.bound) && ++violations <= 5)
          ADD_FAILURE() << names[flavour] << ": out[" << r << ", " << c << "] = " << v << ", expected "
                        << e.expected << " +- " << e.bound;
      }
    std::cout << "[cuda-fp8 gemm] " << names[flavour] << ": worst error / bound " << worst << "\n";
  }
  std::cout << "[cuda-fp8 gemm] " << checked << " elements within the oracle's bound (" << exact
            << " exact), " << said_nothing
            << " where the bound says nothing (overflow); beyond the bound of an fp32 round-to-nearest "
            << "accumulator: " << beyond_fp32_rn << "\n";
  EXPECT_EQ(violations, 0) << "elements outside the oracle's bound";
  EXPECT_EQ(inexact, 0) << "elements of the exact flavour that are not exact";
  EXPECT_GT(checked, 7 * 20 * 256);  // at most one flavour may overflow wholesale
}

CampaignSummary fp8_campaign(const std::string& kernel_name, int64_t cases, uint64_t seed,
                             const std::string& shapes = "small") {
  const auto kernel = make_kernel(kernel_name);
  CampaignOptions o;
  o.kernel_name = kernel_name;
  o.cases = cases;
  o.seed = seed;
  o.shapes = shapes;
  o.invariants = select_invariants("all");  // every cheap invariant
  o.weight_format = WeightFormat::kFp8Block;
  o.out_dir = ::testing::TempDir() + "moefuzz-gpu-fp8-" + kernel_name.substr(kernel_name.rfind('/') + 1) +
              "-" + shapes + "-" + std::to_string(seed);
  return run_campaign(*kernel, o, std::cerr);
}

// Zero findings, and ORACLE compared every case: each case's stages (the exposed FC1 / FC2 codes and
// scales, bit for bit for FC1; GEMM1, activation, GEMM2) and output were checked, none skipped or left
// unevaluated. Some output verdicts are vacuous: `vllm`'s contract lets the FP8 tensor core keep 13
// accumulator bits (kHopperFp8MmaAccumBits), so a block may err by ~1.7% of its magnitude sum, and on
// cancelling rows that exceeds the x(1 + 2^-4) corruption the vacuity probe tries (docs/oracle.md,
// "FP8 block-scaled GEMM"; ~16% of small cases for a CPU kernel under the same contract). So
// `min_passes` non-vacuous passes are required.
void expect_clean(const CampaignSummary& s, int64_t cases, int64_t min_passes) {
  std::cout << format_summary_table(s);
  const InvariantTally oracle = s.tallies.count("ORACLE") ? s.tallies.at("ORACLE") : InvariantTally{};
  std::cout << "[cuda-fp8 layer] " << s.shapes << " shapes: " << s.cases << " FP8 cases checked ("
            << s.unsupported << " drawn recipes outside the domain), " << s.findings.size()
            << " findings; ORACLE passed " << oracle.passed << ", vacuous " << oracle.vacuous << ", failed "
            << oracle.failed << ", max error/bound " << oracle.max_ratio << "\n";
  EXPECT_EQ(s.cases, cases) << "last unsupported: " << s.last_unsupported;
  EXPECT_EQ(oracle.passed + oracle.vacuous, cases) << "ORACLE did not compare every case";
  EXPECT_GE(oracle.passed, min_passes) << "too few non-vacuous ORACLE passes";
  for (const auto& f : s.findings) ADD_FAILURE() << f.signature << " x" << f.occurrences << "  " << f.repro;
}

// Small shapes: H <= 256, I <= 128 once rounded up to multiples of 128.
TEST(CudaFp8Layer, CampaignOfFp8CasesHasNoFindings) {
  MOEFUZZ_REQUIRE_GPU();
  const int64_t cases = env_int("MOEFUZZ_GPU_FP8_CASES", 300);
  expect_clean(fp8_campaign("cuda-fp8", cases, static_cast<uint64_t>(env_int("MOEFUZZ_GPU_SEED", 1))), cases,
               cases / 2);
}

// Medium shapes: H up to 1024, I up to 512, up to 129 tokens (experts spanning several 16-row tiles,
// K of up to 8 blocks).
TEST(CudaFp8Layer, CampaignOfMediumFp8CasesHasNoFindings) {
  MOEFUZZ_REQUIRE_GPU();
  const int64_t cases = env_int("MOEFUZZ_GPU_FP8_MEDIUM_CASES", 20);
  expect_clean(
      fp8_campaign("cuda-fp8", cases, static_cast<uint64_t>(env_int("MOEFUZZ_GPU_SEED", 1)), "medium"), cases,
      cases >= 10 ? 1 : 0);
}

// Teeth on the FP8 device path: dropping the activation scale in the GEMM epilogue is caught.
TEST(CudaFp8Layer, DropActScaleMutantIsKilledByOracle) {
  MOEFUZZ_REQUIRE_GPU();
  const CampaignSummary s = fp8_campaign("cuda-fp8-mutant/drop-act-scale", 30, 7);
  const int64_t failed = s.tallies.count("ORACLE") ? s.tallies.at("ORACLE").failed : 0;
  std::cout << "[cuda-fp8 mutant] drop-act-scale: ORACLE failed " << failed << " of " << s.cases
            << " cases\n";
  EXPECT_GT(failed, 0) << "cuda-fp8-mutant/drop-act-scale survived " << s.cases << " cases";
}

}  // namespace
}  // namespace moefuzz
#endif

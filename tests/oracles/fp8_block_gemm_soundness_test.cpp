// The FP8 block-scaled GEMM bound (oracles/fp8_block_gemm.h) is SOUND and not vacuous.
//
// Sound: the accumulation contract is simulated in software, independently of the bound's
// derivation, on >= 10^5 random and hostile elements: the tensor-core block sum as steps of
// `chunk` products plus the accumulator aligned to the largest addend and truncated to f bits below
// its leading bit (toward zero or toward -inf, chunks of 32, 16 or one product, in natural,
// reversed or random order, one or two fresh-accumulator dots per block), then every fp32 epilogue
// of SPEC-formats.md §1.3/§1.4: Triton fl(fl(P sa) sb) + acc with and without FMA and with
// flush-to-zero, DeepGEMM fl(sa sb) P + acc with and without FMA. Every simulated fp32 result must
// lie within expected +- bound (or the bound says nothing).
// Not vacuous: two real bug classes, a block's scales applied to the next block and a dropped
// activation scale, must land outside the bound on most elements (fractions printed).
#include "oracles/fp8_block_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "core/e4m3.h"
#include "core/fp8_block_quant.h"
#include "core/fp8_group_quant.h"
#include "oracles/fp8_block_dot.h"

namespace moefuzz {
namespace {

struct Element {
  int64_t k = 0;
  std::vector<uint8_t> a, w;  // k codes each
  std::vector<float> sa, sb;  // one per 128-block
  bool realistic = false;     // counted for the non-vacuity fractions
};

enum class Trunc { kTowardZero, kFloor };
struct MmaModel {
  int f = kHopperFp8MmaAccumBits;
  int chunk = 32;
  int order = 0;  // 0 natural, 1 reversed, 2 random
  Trunc trunc = Trunc::kTowardZero;
};

double cut(double x, double grid, Trunc t) {
  const double q = x / grid;  // exact: grid is a power of two
  return (t == Trunc::kTowardZero ? std::trunc(q) : std::floor(q)) * grid;
}

// One tensor-core dot of the products p (exact doubles) under the contract's model.
double mma_dot(std::vector<double> p, const MmaModel& m, std::mt19937_64& g) {
  if (m.order == 1) std::reverse(p.begin(), p.end());
  if (m.order == 2) std::shuffle(p.begin(), p.end(), g);
  double acc = 0;
  for (size_t i = 0; i < p.size(); i += static_cast<size_t>(m.chunk)) {
    const size_t end = std::min(p.size(), i + static_cast<size_t>(m.chunk));
    double big = std::fabs(acc);
    for (size_t j = i; j < end; ++j) big = std::max(big, std::fabs(p[j]));
    if (big == 0) continue;
    const double grid = std::ldexp(1.0, std::ilogb(big) - m.f);
    double s = cut(acc, grid, m.trunc);  // exact: <= 33 addends on one grid, < 2^(f + 8) units
    for (size_t j = i; j < end; ++j) s += cut(p[j], grid, m.trunc);
    acc = s == 0 ? 0 : cut(s, std::ldexp(1.0, std::ilogb(s) - m.f), m.trunc);
  }
  return acc;
}

float ftz(float x) { return std::fabs(x) < 0x1p-126f ? 0.0f * x : x; }

enum class Epilogue { kTriton, kTritonFma, kTritonFtz, kDeepGemm, kDeepGemmFma };
constexpr Epilogue kEpilogues[] = {Epilogue::kTriton, Epilogue::kTritonFma, Epilogue::kTritonFtz,
                                   Epilogue::kDeepGemm, Epilogue::kDeepGemmFma};

float epilogue_step(float acc, float p, float sa, float sb, Epilogue e) {
  switch (e) {
    case Epilogue::kTriton:
      return acc + (p * sa) * sb;
    case Epilogue::kTritonFma:
      return std::fma(p * sa, sb, acc);
    case Epilogue::kTritonFtz:
      return ftz(acc + ftz(ftz(p * sa) * sb));
    case Epilogue::kDeepGemm:
      return acc + (sa * sb) * p;
    case Epilogue::kDeepGemmFma:
      return std::fma(sa * sb, p, acc);
  }
  return 0;
}

// The tensor-core results of every dot (dots_per_block fresh dots per block) under one inner model.
std::vector<float> mma_dots(const Element& el, const std::vector<double>& prod, const MmaModel& m,
                            int dots_per_block, std::mt19937_64& g) {
  std::vector<float> out;
  const int64_t blocks = static_cast<int64_t>(el.sa.size());
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * 128, hi = std::min(el.k, lo + 128),
                  len = (hi - lo + dots_per_block - 1) / dots_per_block;
    for (int64_t d0 = lo; d0 < hi; d0 += len) {
      const double dot =
          mma_dot(std::vector<double>(prod.begin() + d0, prod.begin() + std::min(hi, d0 + len)), m, g);
      out.push_back(static_cast<float>(dot));
      EXPECT_EQ(static_cast<double>(out.back()),
                dot);  // f + 1 <= 24 significant bits: an fp32 register value
    }
  }
  return out;
}

// The kernel's fp32 result: the dots' scales applied by one epilogue, accumulated in order.
double simulate(const Element& el, const std::vector<float>& dots, int dots_per_block, Epilogue e) {
  float acc = 0;
  for (size_t j = 0; j < dots.size(); ++j) {
    const size_t b = j / static_cast<size_t>(dots_per_block);
    acc = epilogue_step(acc, dots[j], el.sa[b], el.sb[b], e);
  }
  return acc;
}

uint8_t random_code(std::mt19937_64& g) {
  uint8_t c;
  do c = static_cast<uint8_t>(g());
  while ((c & 0x7F) == 0x7F);
  return c;
}

float log_uniform(std::mt19937_64& g, int lo, int hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  return static_cast<float>(std::exp2(u(g)));
}

// A realistic element: a Gaussian activation row quantized per 128-group (vLLM CUDA or DeepGEMM
// variant, fp32 or UE8M0 scales), a Gaussian weight row quantized per 128-block.
Element quantized_element(std::mt19937_64& g, int64_t k) {
  Element el;
  el.k = k;
  el.realistic = true;
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k)), w(static_cast<size_t>(k));
  const float xs = log_uniform(g, -6, 6), ws = log_uniform(g, -8, 0);
  for (auto& v : x) v = n(g) * xs * (g() % 16 == 0 ? 20.0f : 1.0f);  // a few outliers
  for (auto& v : w) v = n(g) * ws;
  Fp8GroupQuantOptions o;
  o.ue8m0 = g() % 2 == 0;
  o.variant = g() % 2 == 0 ? Fp8GroupQuantVariant::kVllmCuda : Fp8GroupQuantVariant::kDeepGemmReference;
  const Fp8GroupQuantized qa = quantize_fp8_per_token_group(x, 1, k, o);
  const Fp8BlockQuantized qw = quantize_fp8_block_weight(w, 1, k, g() % 2 == 0);
  el.a = qa.codes;
  el.w = qw.codes;
  el.sa = qa.scales;
  el.sb = qw.scales;
  return el;
}

// Random codes (any K, partial last blocks) with log-uniform scales, or a hostile pattern.
Element random_element(std::mt19937_64& g, int64_t k, int kind) {
  Element el;
  el.k = k;
  const int64_t blocks = (k + 127) / 128;
  el.a.resize(static_cast<size_t>(k));
  el.w.resize(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    uint8_t a = random_code(g), w = random_code(g);
    switch (kind) {
      case 1:  // +-448 everywhere: the largest block sums, cancellation
        a = 0x7E;
        w = (g() & 1) ? 0x7E : 0xFE;
        break;
      case 2:  // one huge product per block, the rest subnormal: swamping in the MMA
        a = i % 128 == 0 ? 0x7E : static_cast<uint8_t>(1 + g() % 7);
        w = i % 128 == 0 ? 0x7E : static_cast<uint8_t>((1 + g() % 7) | (g() & 0x80));
        break;
      case 3:  // exact cancellation with a tiny remainder
        a = (i % 2) ? 0xFE : 0x7E;
        w = i + 1 == k ? 0x01 : 0x7E;
        break;
      case 4:  // zero blocks between random ones
        if ((i / 128) % 2 == 1) a = 0;
        break;
      default:
        break;
    }
    el.a[static_cast<size_t>(i)] = a;
    el.w[static_cast<size_t>(i)] = w;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    float sa = log_uniform(g, -20, 10), sb = log_uniform(g, -20, 10);
    if (kind == 5) {  // underflow: scales whose products (and fl(sa sb)) are fp32 subnormal or flushed
      sa = log_uniform(g, -140, -100);
      sb = log_uniform(g, -40, -10);
    }
    if (kind == 6) {  // near overflow: the bound must say nothing rather than be wrong
      sa = log_uniform(g, 100, 127);
      sb = log_uniform(g, 0, 20);
    }
    el.sa.push_back(sa);
    el.sb.push_back(sb);
  }
  el.realistic = kind == 0;
  return el;
}

Fp8BlockDot dot_of(const Element& el) {
  const DecodedFp8 da = DecodedFp8::from_codes(1, el.k, el.a);
  Fp8BlockDot d;
  fp8_block_dot_rows(da, 0, 1, Fp8Row{el.w.data(), el.k}, &d);
  return d;
}

struct Tally {
  int64_t inputs = 0;  // distinct elements (each checked under 2 contracts: 1 and 2 dots per block)
  int64_t elements = 0, simulations = 0, violations = 0, nothing_said = 0;
  int64_t shift_eligible = 0, shift_caught = 0, drop_eligible = 0, drop_caught = 0;
  double worst = 0;  // largest |sim - expected| / bound
};

void check_element(const Element& el, int f, std::mt19937_64& g, Tally& t) {
  const Fp8BlockDot d = dot_of(el);
  ++t.inputs;
  std::vector<double> prod(static_cast<size_t>(el.k));
  for (size_t i = 0; i < prod.size(); ++i)  // exact: two 4-bit significands
    prod[i] = static_cast<double>(e4m3_to_float(el.a[i])) * static_cast<double>(e4m3_to_float(el.w[i]));
  for (int dpb : {1, 2}) {
    Fp8BlockGemmContract c;
    c.mma_accum_mantissa_bits = f;
    c.dots_per_block = dpb;
    const Fp8GemmBound e = fp8_block_gemm_element(d, el.sa, el.sb, c);
    ++t.elements;
    if (e.says_nothing()) {
      ++t.nothing_said;
      continue;
    }
    MmaModel m;
    m.f = f;
    m.chunk = std::array<int, 3>{32, 16, 1}[g() % 3];
    m.order = static_cast<int>(g() % 3);
    m.trunc = g() % 2 ? Trunc::kTowardZero : Trunc::kFloor;
    const std::vector<float> dots = mma_dots(el, prod, m, dpb, g);
    for (Epilogue ep : kEpilogues) {
      const double got = simulate(el, dots, dpb, ep);
      ++t.simulations;
      const double err = std::fabs(got - e.expected);
      if (!(err <= e.bound)) {
        ++t.violations;
        if (t.violations < 5)
          ADD_FAILURE() << "k " << el.k << " f " << f << " dpb " << dpb << " chunk " << m.chunk << " order "
                        << m.order << " epilogue " << static_cast<int>(ep) << ": got " << got << " expected "
                        << e.expected << " bound " << e.bound;
      }
      if (e.bound > 0) t.worst = std::max(t.worst, err / e.bound);
    }
    if (!el.realistic || dpb != 1) continue;
    // Corruptions, evaluated exactly enough (double, relative 1e-15) against the bound.
    const int64_t blocks = d.blocks();
    double shifted = 0, dropped = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t s = static_cast<size_t>(b == 0 ? 0 : b - 1);
      shifted += d.block_value(b) * el.sa[s] * el.sb[s];
      dropped += d.block_value(b) * el.sb[static_cast<size_t>(b)];
    }
    if (blocks >= 2 && shifted != e.expected) {
      ++t.shift_eligible;
      t.shift_caught += std::fabs(shifted - e.expected) > e.bound ? 1 : 0;
    }
    if (dropped != e.expected) {
      ++t.drop_eligible;
      t.drop_caught += std::fabs(dropped - e.expected) > e.bound ? 1 : 0;
    }
  }
}

void report(const char* name, const Tally& t) {
  std::printf(
      "%s: %lld elements (%lld element-contract pairs), %lld simulations, %lld violations, %lld nothing "
      "said, worst error/bound %.3g; "
      "caught: scale shift %lld/%lld (%.1f%%), dropped activation scale %lld/%lld (%.1f%%)\n",
      name, static_cast<long long>(t.inputs), static_cast<long long>(t.elements),
      static_cast<long long>(t.simulations), static_cast<long long>(t.violations),
      static_cast<long long>(t.nothing_said), t.worst, static_cast<long long>(t.shift_caught),
      static_cast<long long>(t.shift_eligible),
      t.shift_eligible ? 100.0 * static_cast<double>(t.shift_caught) / static_cast<double>(t.shift_eligible)
                       : 0.0,
      static_cast<long long>(t.drop_caught), static_cast<long long>(t.drop_eligible),
      t.drop_eligible ? 100.0 * static_cast<double>(t.drop_caught) / static_cast<double>(t.drop_eligible)
                      : 0.0);
}

TEST(Fp8BlockGemmBound, HandComputedSingleBlock) {
  // One block of 128 products of 1 * 1: P = 128 exactly, M = 128.
  Fp8BlockDot d;
  d.cols = 128;
  d.sum = {int64_t{128} << 18};
  d.abs_sum = d.sum;
  const Fp8GemmBound e = fp8_block_gemm_element(d, std::vector<float>{0.5f}, std::vector<float>{0.25f}, {});
  EXPECT_EQ(e.expected, 16.0);
  // gamma_{136}(2^-13) * 16 dominates (the default contract's f = kHopperFp8MmaAccumBits = 13); the fp32
  // terms add gamma_2(2^-24) (1 + gamma) 16.
  static_assert(kHopperFp8MmaAccumBits == 13);
  const double g = 136.0 / 8192 / (1 - 136.0 / 8192);
  EXPECT_GE(e.bound, g * 16);
  EXPECT_LT(e.bound, g * 16 * (1 + 1e-5));
  d.nan = true;
  EXPECT_TRUE(
      fp8_block_gemm_element(d, std::vector<float>{0.5f}, std::vector<float>{0.25f}, {}).says_nothing());
}

TEST(Fp8BlockGemmBound, NonFiniteScalesAndOverflowSayNothing) {
  Fp8BlockDot d;
  d.cols = 128;
  d.sum = {int64_t{100} << 18};
  d.abs_sum = d.sum;
  const std::vector<float> one{1.0f};
  EXPECT_TRUE(fp8_block_gemm_element(d, std::vector<float>{INFINITY}, one, {}).says_nothing());
  EXPECT_TRUE(fp8_block_gemm_element(d, one, std::vector<float>{NAN}, {}).says_nothing());
  EXPECT_TRUE(
      fp8_block_gemm_element(d, std::vector<float>{3e38f}, std::vector<float>{2.0f}, {}).says_nothing());
  EXPECT_FALSE(
      fp8_block_gemm_element(d, std::vector<float>{1e30f}, std::vector<float>{2.0f}, {}).says_nothing());
  EXPECT_THROW(fp8_block_gemm_element(d, std::vector<float>{}, one, {}), std::exception);
  Fp8BlockGemmContract bad;
  bad.mma_accum_mantissa_bits = 0;
  EXPECT_THROW(fp8_block_gemm_element(d, one, one, bad), std::exception);
}

// 88,000 elements (with the 12,000 hostile ones below: 10^5), each under 2 contracts and 5
// epilogues: realistic quantized rows and random codes.
TEST(Fp8BlockGemmBound, SoundOnRandomElements) {
  std::mt19937_64 g(2026);
  Tally t;
  const int64_t ks[] = {128, 256, 384, 512, 768, 1024};
  while (t.inputs < 50000) {
    const int64_t k = ks[g() % 6];
    const int f = g() % 4 == 0 ? 11 : kHopperFp8MmaAccumBits;  // a quarter with a narrower accumulator
    check_element(quantized_element(g, k), f, g, t);
  }
  while (t.inputs < 88000) {
    const int64_t k = 1 + static_cast<int64_t>(g() % 700);
    check_element(random_element(g, k, 0), kHopperFp8MmaAccumBits, g, t);
  }
  report("random", t);
  EXPECT_EQ(t.violations, 0);
  EXPECT_GE(t.inputs, 88000);
  EXPECT_GT(t.shift_eligible, 1000);
  EXPECT_GT(t.drop_eligible, 1000);
  // Not vacuous. Measured with this seed: a dropped activation scale is caught on 88.7% of the
  // elements it changes (the rest have activation scales near 1), a block's scales applied to the
  // next block on 59.7% (neighbouring scales are often close, and the worst-case MMA model of the
  // contract allows ~7% of sum M_b |s_b|); the floors below leave room for nothing but a change.
  EXPECT_GT(static_cast<double>(t.drop_caught), 0.8 * static_cast<double>(t.drop_eligible));
  EXPECT_GT(static_cast<double>(t.shift_caught), 0.45 * static_cast<double>(t.shift_eligible));
}

TEST(Fp8BlockGemmBound, SoundOnHostileElements) {
  std::mt19937_64 g(77);
  Tally t;
  int64_t nothing_on_overflow = 0;
  for (int i = 0; i < 12000; ++i) {
    const int kind = 1 + i % 6;
    const int64_t k = std::array<int64_t, 6>{1, 127, 128, 129, 256, 1000}[g() % 6];
    const int64_t before = t.nothing_said;
    check_element(random_element(g, k, kind), kHopperFp8MmaAccumBits, g, t);
    if (kind == 6) nothing_on_overflow += t.nothing_said - before;
  }
  report("hostile", t);
  EXPECT_EQ(t.violations, 0);
  EXPECT_GT(nothing_on_overflow, 0);  // the near-overflow pattern reaches the NaN ("nothing said") branch
  EXPECT_LT(t.nothing_said, t.elements / 4);
}

}  // namespace
}  // namespace moefuzz

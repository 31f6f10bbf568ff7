// The whole-layer CPU oracle on FP8 block-scaled W8A8 layers against the same layer in NVFP4
// (docs/perf.md, "FP8 block oracle"; issue #17: the exact FP8 block oracle within 2x of the NVFP4
// oracle's cost per MAC), per GEMM multiply-add: the time of one reference_layer call over the
// layer's routed rows x (2I x H + H x I).
//
// Both formats are built alike: BM_OracleLayer/M's recipe (oracle_bench.cpp: seed 42, profile
// flashinfer-cutlass, softmax routing, T128 H2048 I1024 E64 k8) with only the quantization changed
// (weight_format fp8_block, activations fp8_group; FP8 weights come from the bf16 draw, docs/formats.md).
// The profile's FP8 fields are the defaults: vLLM's CUDA quantizer (IEEE, so unexposed FC1 operands
// are exact), fp32 round-to-nearest accumulation, one dot per block. Two ways to run the oracle:
//  * unconditioned (/M-fp8, /S-fp8; NVFP4: oracle_bench.cpp's /M, /S): the synthetic routing of
//    BM_OracleLayer/M and no kernel exposures, so the FC2 input is covered by the oracle's own
//    envelope (NVFP4: the flip magnitudes; FP8: the per-element deviations);
//  * conditioned (/M/conditioned, /M-fp8/conditioned): the `cpu-flashinfer` kernel (the CPU
//    pipeline under the same profile) runs once outside the timed region and the oracle is
//    conditioned on its LayerResult (its routing and its exposed FC1/FC2 codes), as a check does.
//  * reused (/M/reused, /S/reused, NVFP4): conditioned, with every row already in the row memo
//    (oracles/row_memo.h), as the evaluations of PERM's, BATCH's and SCALE1's transformed runs find
//    them: what an evaluation costs beyond its rows (routing, keys, the combine).
// BM_OracleLayerFp8VsNvfp4/* run the two formats alternately in one loop (the comparison to read on a
// shared machine); the others time one format each.
#include <benchmark/benchmark.h>

#include <ctime>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/rng.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "oracles/layer_ref.h"
#include "oracles/row_memo.h"

namespace moefuzz {
namespace {

constexpr const char* kProfile = "flashinfer-cutlass";
constexpr const char* kKernel = "cpu-flashinfer";  // the CPU pipeline claiming kProfile

constexpr Shape kShapeS{.tokens = 8, .hidden = 256, .inter = 128, .experts = 16, .top_k = 4};
constexpr Shape kShapeM{.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8};

Case layer_case(Shape shape, bool fp8) {
  CaseRecipe r;
  r.seed = 42;
  r.profile = kProfile;
  r.shape = shape;
  r.routing.mode = RoutingMode::kSoftmax;
  if (fp8) {
    r.quant.weights = WeightFormat::kFp8Block;
    r.quant.activations = ActivationFormat::kFp8Group;
  }
  return materialize(r);
}

// BM_OracleLayer's routing (oracle_bench.cpp layer_setup): slot j of token t to expert
// (7 t + j E / k) mod E, weights 1/k.
RoutingDecision synthetic_routing(Shape shape) {
  RoutingDecision d{shape.tokens, shape.top_k, {}, {}};
  for (int64_t t = 0; t < shape.tokens; ++t)
    for (int64_t j = 0; j < shape.top_k; ++j) {
      d.ids.push_back(static_cast<int32_t>((t * 7 + j * (shape.experts / shape.top_k)) % shape.experts));
      d.weights.push_back(1.0f / static_cast<float>(shape.top_k));
    }
  return d;
}

void set_counters(benchmark::State& state, Shape shape) {
  const double macs = static_cast<double>(shape.tokens * shape.top_k * 3 * shape.inter * shape.hidden);
  state.counters["macs"] = macs;
  state.counters["ns_per_mac"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * macs * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// reused: every row is already in the evaluation's row memo (see the header).
void run(benchmark::State& state, Shape shape, bool fp8, bool conditioned, bool reused = false) {
  Case c;
  LayerResult kernel;
  try {
    c = layer_case(shape, fp8);
    if (conditioned) {
      const std::unique_ptr<Kernel> k = make_kernel(kKernel);
      if (const std::string why = k->supports(c.recipe); !why.empty())
        throw std::runtime_error(std::string(kKernel) + " declines the case: " + why);
      k->run_layer(c, RunOptions{}, kernel);
    } else {
      kernel.routing = synthetic_routing(shape);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    for (auto _ : state) {
    }
    return;
  }
  const Profile& p = profile_by_name(kProfile);
  const LayerResult* given = conditioned ? &kernel : nullptr;
  OracleRowMemo memo(p);
  const LayerReferenceOptions opts{.keep_intermediates = false, .memo = reused ? &memo : nullptr};
  if (reused) benchmark::DoNotOptimize(reference_layer(c, p, kernel.routing, given, opts));
  for (auto _ : state) benchmark::DoNotOptimize(reference_layer(c, p, kernel.routing, given, opts));
  set_counters(state, shape);
}

// Thread CPU time of f() in seconds.
template <class F>
double cpu_seconds(F&& f) {
  timespec a{}, b{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  f();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  return static_cast<double>(b.tv_sec - a.tv_sec) + 1e-9 * static_cast<double>(b.tv_nsec - a.tv_nsec);
}

// Both formats in one loop, alternating (NVFP4 then FP8 each iteration), so the two sides share the
// machine's load on a shared VM: counters nvfp4_ns_per_mac, fp8_ns_per_mac (thread CPU time) and
// their ratio fp8_over_nvfp4 (issue #17's measure).
void run_side_by_side(benchmark::State& state, Shape shape, bool conditioned) {
  Case c[2];
  LayerResult kernel[2];
  try {
    for (int f = 0; f < 2; ++f) {
      c[f] = layer_case(shape, f == 1);
      if (conditioned) {
        const std::unique_ptr<Kernel> k = make_kernel(kKernel);
        if (const std::string why = k->supports(c[f].recipe); !why.empty())
          throw std::runtime_error(std::string(kKernel) + " declines the case: " + why);
        k->run_layer(c[f], RunOptions{}, kernel[f]);
      } else {
        kernel[f].routing = synthetic_routing(shape);
      }
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    for (auto _ : state) {
    }
    return;
  }
  const Profile& p = profile_by_name(kProfile);
  double seconds[2] = {0, 0};
  for (auto _ : state)
    for (int f = 0; f < 2; ++f)
      seconds[f] += cpu_seconds([&] {
        benchmark::DoNotOptimize(reference_layer(
            c[f], p, kernel[f].routing, conditioned ? &kernel[f] : nullptr, {.keep_intermediates = false}));
      });
  const double macs = static_cast<double>(shape.tokens * shape.top_k * 3 * shape.inter * shape.hidden) *
                      static_cast<double>(state.iterations());
  state.counters["nvfp4_ns_per_mac"] = seconds[0] / macs * 1e9;
  state.counters["fp8_ns_per_mac"] = seconds[1] / macs * 1e9;
  state.counters["fp8_over_nvfp4"] = seconds[1] / seconds[0];
}

void BM_OracleLayer_S_Fp8(benchmark::State& st) { run(st, kShapeS, true, false); }
void BM_OracleLayer_M_Fp8(benchmark::State& st) { run(st, kShapeM, true, false); }
void BM_OracleLayer_M_Conditioned(benchmark::State& st) { run(st, kShapeM, false, true); }
void BM_OracleLayer_M_Fp8_Conditioned(benchmark::State& st) { run(st, kShapeM, true, true); }
void BM_OracleLayer_M_Reused(benchmark::State& st) { run(st, kShapeM, false, true, /*reused=*/true); }
void BM_OracleLayer_S_Reused(benchmark::State& st) { run(st, kShapeS, false, true, /*reused=*/true); }
void BM_OracleLayerFp8VsNvfp4_S(benchmark::State& st) { run_side_by_side(st, kShapeS, false); }
void BM_OracleLayerFp8VsNvfp4_M(benchmark::State& st) { run_side_by_side(st, kShapeM, false); }
void BM_OracleLayerFp8VsNvfp4_M_Conditioned(benchmark::State& st) { run_side_by_side(st, kShapeM, true); }
BENCHMARK(BM_OracleLayerFp8VsNvfp4_S)->Name("BM_OracleLayerFp8VsNvfp4/S")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayerFp8VsNvfp4_M)
    ->Name("BM_OracleLayerFp8VsNvfp4/M")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(4);
BENCHMARK(BM_OracleLayerFp8VsNvfp4_M_Conditioned)
    ->Name("BM_OracleLayerFp8VsNvfp4/M/conditioned")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(4);
BENCHMARK(BM_OracleLayer_S_Fp8)->Name("BM_OracleLayer/S-fp8")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayer_M_Fp8)->Name("BM_OracleLayer/M-fp8")->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_OracleLayer_M_Conditioned)
    ->Name("BM_OracleLayer/M/conditioned")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK(BM_OracleLayer_M_Reused)->Name("BM_OracleLayer/M/reused")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayer_S_Reused)->Name("BM_OracleLayer/S/reused")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayer_M_Fp8_Conditioned)
    ->Name("BM_OracleLayer/M-fp8/conditioned")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace moefuzz

// The whole-layer CPU oracle on FP8 block-scaled W8A8 layers against the same layer in NVFP4
// (docs/perf.md, "FP8 block oracle"; issue #17: the exact FP8 block oracle within 2x of the NVFP4
// oracle's cost per MAC). Every benchmark here reports ns_per_mac: the time of one reference_layer
// call over the layer's GEMM multiply-adds (routed rows x (2I x H + H x I)).
//
// Both formats are built alike: BM_OracleLayer/M's recipe (oracle_bench.cpp: seed 42, profile
// flashinfer-cutlass, softmax routing, T128 H2048 I1024 E64 k8) with only the quantization changed
// (weight_format fp8_block, activations fp8_group; the FP8 weights are the same bf16 draw quantized
// per 128x128 block). Two ways to run the oracle, each for both formats:
//  * unconditioned (/M-fp8, /S-fp8; NVFP4: oracle_bench.cpp's /M, /S): the synthetic routing of
//    BM_OracleLayer/M and no kernel exposures, so every quantized input is covered by the oracle's
//    own envelope (NVFP4: the FC2 flip magnitudes; FP8: the per-element deviations);
//  * conditioned (/M/conditioned, /M-fp8/conditioned): the `cpu-flashinfer` kernel (the CPU
//    pipeline under the same profile) runs once outside the timed region and the oracle is
//    conditioned on its LayerResult (its routing and its exposed FC1/FC2 codes), as a check does.
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/rng.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "oracles/layer_ref.h"

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

void run(benchmark::State& state, Shape shape, bool fp8, bool conditioned) {
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
  for (auto _ : state)
    benchmark::DoNotOptimize(reference_layer(c, p, kernel.routing, given, {.keep_intermediates = false}));
  set_counters(state, shape);
}

void BM_OracleLayer_S_Fp8(benchmark::State& st) { run(st, kShapeS, true, false); }
void BM_OracleLayer_M_Fp8(benchmark::State& st) { run(st, kShapeM, true, false); }
void BM_OracleLayer_M_Conditioned(benchmark::State& st) { run(st, kShapeM, false, true); }
void BM_OracleLayer_M_Fp8_Conditioned(benchmark::State& st) { run(st, kShapeM, true, true); }
BENCHMARK(BM_OracleLayer_S_Fp8)->Name("BM_OracleLayer/S-fp8")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayer_M_Fp8)->Name("BM_OracleLayer/M-fp8")->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_OracleLayer_M_Conditioned)
    ->Name("BM_OracleLayer/M/conditioned")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK(BM_OracleLayer_M_Fp8_Conditioned)
    ->Name("BM_OracleLayer/M-fp8/conditioned")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace moefuzz

// BM_MaterializeModelLayer/<format>: materialize() of one expert of gpt-oss's dimensions (H = I = 2880,
// T 4, SwiGLU limit 7, expert biases where the format has them), for the weight formats its campaigns
// draw: mxfp4 (its checkpoint, W4A16), bf16, nvfp4. One expert is drawn on one thread
// (core/case.cpp draws experts in parallel, one per thread), so time / (3 x 2880 x 2880) is the draw's
// cost per weight element; a gpt-oss case draws 32-128 such experts. Results: docs/perf.md, section
// "Case materialization".
#include <benchmark/benchmark.h>

#include <utility>

#include "core/case.h"

namespace moefuzz {
namespace {

CaseRecipe gpt_oss_layer(WeightFormat f) {
  CaseRecipe r;
  r.profile = "triton-matmul-ogs";
  r.shape = {.tokens = 4, .hidden = 2880, .inter = 2880, .experts = 1, .top_k = 1};
  r.quant.weights = f;
  r.quant.activations = f == WeightFormat::kNvfp4 ? ActivationFormat::kNvfp4 : ActivationFormat::kBf16;
  r.swiglu = {.limit = 7.0, .alpha = 1.702, .beta = 1.0};
  r.expert_bias = f != WeightFormat::kNvfp4;
  return r;
}

void BM_MaterializeModelLayer(benchmark::State& state, WeightFormat f) {
  const CaseRecipe r = gpt_oss_layer(f);
  for (auto _ : state) {
    Case c = materialize(r);
    benchmark::DoNotOptimize(&std::as_const(c.experts).front());  // const: no copy-on-write
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 3 * 2880 * 2880);  // weight elements
}

BENCHMARK_CAPTURE(BM_MaterializeModelLayer, mxfp4, WeightFormat::kMxfp4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaterializeModelLayer, bf16, WeightFormat::kBf16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaterializeModelLayer, nvfp4, WeightFormat::kNvfp4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moefuzz

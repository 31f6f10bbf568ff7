// The `cuda` kernel: the CUDA MoE pipeline (moe_pipeline.h) behind the moefuzz::Kernel interface,
// claiming profile "sglang-cutlass-fp4" (w13 [gate; up], routed scale in top-k, fast-math NVFP4
// quantizer with the zero test on the scale, combine bf16(y * bf16(w)) summed in fp32, bf16 at every
// rounding point). The pipeline also implements the FlashInfer [up; gate] / vecMax / fp32
// slot-order variants (PipelineConfig), used when a profile asks for them.
#include <cstring>

#include "core/bf16.h"
#include "core/errors.h"
#include "core/profile.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr const char* kProfileName = "sglang-cutlass-fp4";
// Exposing every stage costs a copy of each intermediate; above this the kernel returns the output
// and routing only (the GPU tests read sampled rows through MoePipeline instead).
constexpr int64_t kMaxExposedBytes = int64_t{1} << 30;

// The contract this kernel implements, read from the profile table (core/profile.cpp). Until that
// table holds the row, the same contract written out here from SPEC.md (§1.5, §2.3, §3.1, §3.6).
const Profile& claimed_profile() {
  try {
    return profile_by_name(kProfileName);
  } catch (const InputError&) {
    static const Profile fallback = [] {
      Profile p;
      p.name = kProfileName;
      p.w13_order = W13Order::kGateUp;
      p.rsf_in_topk = true;
      p.renorm_epsilon = 0.0;
      p.quantizer = QuantizerVariant::kFastMath;
      p.zero_scale_rule = ZeroScaleRule::kScaleTest;
      p.per_expert_act_scales = true;
      p.combine = CombineAccum::kBf16Products;
      return p;
    }();
    return fallback;
  }
}

class CudaKernel final : public Kernel {
 public:
  explicit CudaKernel(CudaKernelSpec spec) : spec_(std::move(spec)) {}
  std::string name() const override { return spec_.name; }
  std::string profile() const override { return kProfileName; }
  std::string description() const override { return spec_.description; }
  std::vector<std::string> expected_killers() const override { return spec_.killers; }
  KernelClaims claims() const override {
    return {.deterministic = true,
            .batch_invariant = true,
            .tactics = cuda::kNumTactics,
            .materialized_ovf = true};
  }
  std::string supports(const CaseRecipe& r) const override {
    std::string why;
    if (!cuda::cuda_device_available(&why)) return "cuda: no usable GPU (" + why + ")";
    return cuda::unsupported_reason(r, claimed_profile());
  }
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    const CaseRecipe& r = c.recipe;
    const std::string why = supports(r);
    if (!why.empty()) throw InputError(why);
    cuda::PipelineConfig cfg = cuda::config_for(r, claimed_profile(), opts.tactic);
    cfg.deviation = spec_.deviation;
    cuda::MoePipeline p(cfg);
    p.upload_case(c);
    p.run();

    const int64_t T = cfg.tokens, H = cfg.hidden, I = cfg.inter, S = cfg.all_slots(), R = cfg.routed_slots();
    const std::vector<uint16_t> y = p.download_output();
    out.output.resize(static_cast<size_t>(T * H));
    for (size_t i = 0; i < y.size(); ++i) out.output[i] = bf16_to_float(y[i]);

    std::vector<int32_t> ids;
    std::vector<float> w;
    p.download_routing(ids, w);
    out.routing.tokens = T;
    out.routing.slots = R;
    out.routing.ids.resize(static_cast<size_t>(T * R));
    out.routing.weights.resize(static_cast<size_t>(T * R));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < R; ++s) {
        out.routing.ids[t * R + s] = ids[t * S + s];
        out.routing.weights[t * R + s] = w[t * S + s];
      }

    const int64_t pairs = T * R;
    if (pairs * (2 * H + 3 * I) * 4 > kMaxExposedBytes) return;
    const cuda::Permutation perm = p.download_permutation();
    std::vector<int64_t> rows(static_cast<size_t>(pairs));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < R; ++s) rows[t * R + s] = perm.pair_row[t * S + s];

    auto quantized = [&](bool fc1) {
      QuantizedRows q;
      q.rows = pairs;
      q.cols = fc1 ? H : I;
      if (fc1)
        p.download_fc1_rows(rows, q.packed, q.scales);
      else
        p.download_fc2_rows(rows, q.packed, q.scales);
      return q;
    };
    out.fc1_input = quantized(true);
    out.fc2_input = quantized(false);
    // GEMM1 in semantic [gate | up] order whatever the kernel's w13 order.
    const std::vector<uint16_t> g1 = p.download_gemm1_rows(rows);
    std::vector<float> gemm1(static_cast<size_t>(pairs * 2 * I));
    for (int64_t i = 0; i < pairs; ++i)
      for (int64_t n = 0; n < 2 * I; ++n) {
        const int64_t semantic = cfg.up_first ? (n < I ? n + I : n - I) : n;
        gemm1[i * 2 * I + semantic] = bf16_to_float(g1[i * 2 * I + n]);
      }
    out.gemm1 = std::move(gemm1);
    auto widen = [](const std::vector<uint16_t>& v) {
      std::vector<float> f(v.size());
      for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_float(v[i]);
      return f;
    };
    out.activation = widen(p.download_act_rows(rows));
    out.gemm2 = widen(p.download_gemm2_rows(rows));
    if (cfg.separate_shared > 0) {
      std::vector<int64_t> shared_rows(static_cast<size_t>(T));
      for (int64_t t = 0; t < T; ++t) shared_rows[t] = perm.pair_row[t * S + R];
      out.shared_output = widen(p.download_gemm2_rows(shared_rows));
    }
  }

 private:
  CudaKernelSpec spec_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec) {
  return std::make_unique<CudaKernel>(std::move(spec));
}
std::unique_ptr<Kernel> make_cuda_kernel() { return make_cuda_kernel(CudaKernelSpec{}); }
const Profile& cuda_kernel_profile() { return claimed_profile(); }

void add_cuda_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"cuda", KernelKind::kCuda, [] { return make_cuda_kernel(); }});
  add_cuda_mutants(out);  // cuda_mutants.cpp
}

}  // namespace moefuzz

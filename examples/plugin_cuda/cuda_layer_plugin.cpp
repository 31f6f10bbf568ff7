// moefuzz's own CUDA pipeline (kernels/cuda/moe_pipeline.h, the `cuda` kernel) shipped as a
// whole-layer device-memory plugin (wants_device = 1): what a user's CUDA MoE layer looks like
// behind include/moefuzz/plugin.h. Claims sglang-cutlass-fp4, like the built-in `cuda` kernel.
//
// The pipeline's own upload (MoePipeline::upload_case) re-lays the weights out on the host (w13
// order, 128x4-swizzled block scales), so this plugin reads the device inputs it is given back into
// a host Case, runs the pipeline, and writes its output, ids and weights into the device outputs on
// c->stream. A kernel that consumes the semantic device layout directly skips the round trip.
//
// Build: part of the moefuzz build when CUDA is found (build/<preset>/lib/libmoefuzz_cuda_layer.so).
// Run:   moefuzz check --kernel build/release/lib/libmoefuzz_cuda_layer.so --cases 50
#include <cuda_runtime.h>

#include <exception>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/profile.h"
#include "kernels/cuda/moe_pipeline.h"
#include "moefuzz/plugin.h"

namespace {

constexpr const char* kProfile = "sglang-cutlass-fp4";

// The recipe fields the pipeline's configuration reads, from the case descriptor.
moefuzz::CaseRecipe recipe_of(const moefuzz_case_desc* c) {
  moefuzz::CaseRecipe r;
  r.profile = kProfile;
  r.shape.tokens = c->tokens;
  r.shape.hidden = c->hidden;
  r.shape.inter = c->inter;
  r.shape.experts = c->experts;
  r.shape.top_k = c->top_k;
  r.shape.n_group = c->n_group;
  r.shape.topk_group = c->topk_group;
  r.shape.shared_experts = c->shared_experts;
  r.routing.vocab = c->hash_vocab;
  r.routing.mode = static_cast<moefuzz::RoutingMode>(c->routing_mode);
  r.routing.hash_score = static_cast<moefuzz::ScoreFunc>(c->hash_score);
  r.routing.renormalize = c->renormalize != 0;
  r.routing.correction_bias = c->correction_bias != 0;
  r.routing.shared_fusion = static_cast<moefuzz::SharedFusion>(c->shared_fusion);
  r.routing.routed_scaling_factor = c->routed_scaling_factor_f64;
  r.quant.activations = static_cast<moefuzz::ActivationFormat>(c->act_format);
  r.swiglu.limit = c->swiglu_limit;
  r.swiglu.alpha = c->swiglu_alpha;
  r.swiglu.beta = c->swiglu_beta;
  return r;
}

// A copy on the plugin's stream. This library carries its own static CUDA runtime; should that runtime
// not accept moefuzz's stream handle, it falls back to a synchronous copy (moefuzz's uploads are
// complete before the call, and it synchronizes after).
bool copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes == 0) return true;
  if (cudaMemcpyAsync(dst, src, bytes, kind, s) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return cudaMemcpy(dst, src, bytes, kind) == cudaSuccess;
}

template <class T>
bool to_host(const moefuzz_tensor& t, std::vector<T>& out, cudaStream_t s) {
  if (t.data == nullptr || t.ndim == 0) return out.clear(), true;
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  out.resize(static_cast<size_t>(n));
  return cudaMemcpyAsync(out.data(), t.data, out.size() * sizeof(T), cudaMemcpyDeviceToHost, s) ==
         cudaSuccess;
}

bool nvfp4_to_host(const moefuzz_nvfp4& m, int64_t rows, int64_t cols, moefuzz::Nvfp4Matrix& out,
                   cudaStream_t s) {
  out.rows = rows;
  out.cols = cols;
  out.global_dequant = m.global_dequant;
  return to_host(m.codes, out.packed, s) && to_host(m.scales, out.scales, s);
}

const char* cuda_layer_supports(const moefuzz_case_desc* c) {
  static thread_local std::string why;
  try {
    why = moefuzz::cuda::unsupported_reason(recipe_of(c), moefuzz::profile_by_name(kProfile));
  } catch (const std::exception& e) {
    why = e.what();
  }
  return why.empty() ? nullptr : why.c_str();
}

const char* cuda_layer(const moefuzz_case_desc* c, moefuzz_layer_out* out) {
  static thread_local std::string err;
  if (!c->device) return "expected device buffers (wants_device = 1)";
  try {
    cudaStream_t s = static_cast<cudaStream_t>(c->stream);
    const moefuzz::CaseRecipe r = recipe_of(c);
    moefuzz::Case hc;
    hc.recipe = r;
    bool ok = to_host(c->hidden_states, hc.hidden, s) && to_host(c->logits, hc.logits, s) &&
              to_host(c->bias, hc.bias, s) && to_host(c->token_ids, hc.token_ids, s) &&
              to_host(c->hash_table, hc.hash_table, s) && to_host(c->a1_scale, hc.a1_scale, s) &&
              to_host(c->a2_scale, hc.a2_scale, s);
    hc.experts.resize(static_cast<size_t>(c->num_weight_experts));
    for (int64_t e = 0; ok && e < c->num_weight_experts; ++e) {
      const moefuzz_expert& w = c->expert_weights[e];
      moefuzz::ExpertWeights& h = hc.experts[static_cast<size_t>(e)];
      ok = nvfp4_to_host(w.gate, c->inter, c->hidden, h.gate, s) &&
           nvfp4_to_host(w.up, c->inter, c->hidden, h.up, s) &&
           nvfp4_to_host(w.down, c->hidden, c->inter, h.down, s);
    }
    if (!ok || (cudaStreamSynchronize(s) != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess))
      return "reading the device inputs failed";

    moefuzz::cuda::MoePipeline p(moefuzz::cuda::config_for(r, moefuzz::profile_by_name(kProfile), c->tactic));
    p.upload_case(hc);
    p.run();
    const std::vector<uint16_t> y = p.download_output();
    std::vector<float> yf(y.size());
    for (size_t i = 0; i < y.size(); ++i) yf[i] = moefuzz::bf16_to_float(y[i]);
    std::vector<int32_t> ids;
    std::vector<float> w;
    p.download_routing(ids, w);  // [T, all_slots]: the routed slots first
    const int64_t T = c->tokens, slots = c->slots, all = static_cast<int64_t>(ids.size()) / (T > 0 ? T : 1);
    std::vector<int32_t> out_ids(static_cast<size_t>(T * slots));
    std::vector<float> out_w(out_ids.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < slots; ++k) {
        out_ids[t * slots + k] = ids[t * all + k];
        out_w[t * slots + k] = w[t * all + k];
      }
    if (!copy(out->output.data, yf.data(), yf.size() * 4, cudaMemcpyHostToDevice, s) ||
        !copy(out->topk_ids.data, out_ids.data(), out_ids.size() * 4, cudaMemcpyHostToDevice, s) ||
        !copy(out->topk_weights.data, out_w.data(), out_w.size() * 4, cudaMemcpyHostToDevice, s) ||
        (cudaStreamSynchronize(s) != cudaSuccess &&
         cudaDeviceSynchronize() != cudaSuccess))  // host vectors die here
      return "writing the device outputs failed";
    return nullptr;
  } catch (const std::exception& e) {
    err = e.what();
    return err.c_str();
  }
}

const moefuzz_plugin_v1 kPlugin = {MOEFUZZ_PLUGIN_ABI_VERSION,
                                   sizeof(moefuzz_plugin_v1),
                                   "cuda-layer-plugin",
                                   kProfile,
                                   "moefuzz's CUDA MoE pipeline as a whole-layer device-memory plugin",
                                   1,
                                   1,
                                   moefuzz::cuda::kNumTactics,  // deterministic, batch_invariant, tactics
                                   MOEFUZZ_STAGE_LAYER,
                                   1,  // stages, device buffers: yes
                                   cuda_layer_supports,
                                   cuda_layer,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr,
                                   nullptr};

}  // namespace

extern "C" MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kPlugin; }

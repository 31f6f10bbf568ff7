#include "kernels/python_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/content_hasher.h"
#include "core/errors.h"
#include "core/expert_fingerprint.h"
#include "core/fp4_packing.h"
#include "core/fp8_group_quant.h"
#include "core/profile.h"
#include "core/profile_json.h"
#include "core/recipe_text.h"
#include "kernels/composed_pipeline.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/isolated_run.h"
#include "kernels/plugin_kernel.h"
#include "kernels/python_worker.h"

namespace moefuzz {
namespace {

using nlohmann::json;

// JSON has no infinity: +inf (no SwiGLU clamp) travels as null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The case's configuration as the Python side sees it (python/moefuzz/case.py). rsf_in_topk follows
// the CLAIMED profile, as for C plugins (include/moefuzz/plugin.h).
json config_of(const CaseRecipe& r, const Profile* profile, const std::string& claimed, int tactic) {
  const bool rsf_in_topk =
      profile != nullptr ? profile->rsf_in_topk : r.routing.scale_placement == ScalePlacement::kTopK;
  return {
      {"profile", claimed},
      {"recipe_profile", r.profile},
      {"tokens", r.shape.tokens},
      {"hidden", r.shape.hidden},
      {"inter", r.shape.inter},
      {"experts", r.shape.experts},
      {"top_k", r.shape.top_k},
      {"n_group", r.shape.n_group},
      {"topk_group", r.shape.topk_group},
      {"shared_experts", r.shape.shared_experts},
      {"slots", r.slots()},
      {"hash_vocab", r.hash_vocab()},
      {"routing_mode", name_of(r.routing.mode)},
      {"hash_score", name_of(r.routing.hash_score)},
      {"renormalize", r.normalizes_weights()},
      {"correction_bias", r.routing.correction_bias},
      {"routed_scaling_factor", r.routing.routed_scaling_factor},
      {"routed_scaling_factor_f32", static_cast<double>(static_cast<float>(r.routing.routed_scaling_factor))},
      {"rsf_in_topk", rsf_in_topk},
      {"shared_fusion", name_of(r.routing.shared_fusion)},
      {"act_format", name_of(r.quant.activations)},
      {"weight_format", name_of(r.quant.weights)},
      {"fp8_scales", r.quant.fp8_ue8m0 ? "ue8m0" : "fp32"},
      {"act_scales", name_of(r.quant.act_scales)},
      {"swiglu_limit", finite_or_null(r.swiglu.limit)},
      {"swiglu_alpha", r.swiglu.alpha},
      {"swiglu_beta", r.swiglu.beta},
      {"tactic", tactic},
      {"contract", profile != nullptr ? profile_json(*profile) : json(nullptr)}};
}

std::string hex128(const ContentHasher& h) {
  const Hash128 v = h.value128();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(v.high),
                static_cast<unsigned long long>(v.low));
  return buf;
}

// 128-bit content keys (core/content_hasher.h), so a cached tensor is never mistaken for another.
std::string inputs_key(const Case& c) {
  ContentHasher h(1);
  h.add(c.hidden), h.add(c.logits), h.add(c.bias), h.add(c.token_ids), h.add(c.hash_table);
  h.add(c.a1_scale), h.add(c.a2_scale);
  const std::vector<int64_t> dims = {c.recipe.shape.tokens, c.recipe.shape.hidden, c.recipe.shape.experts,
                                     c.recipe.shape.top_k, c.recipe.hash_vocab()};
  h.add(dims);
  return hex128(h);
}
// Every weight format's tensors enter the key (core/expert_fingerprint.h): a format left out would let
// two cases with different weights share a key, and the worker would run one case on the other's
// cached weights (a false finding blamed on the kernel).
std::string weights_key(const Case& c) {
  ContentHasher h(3);
  for (size_t e = 0; e < c.experts.size(); ++e) {
    const Hash128 content = expert_content_hash(c.experts, e);
    h.add_bytes(&content, sizeof content);
  }
  return hex128(h);
}

WorkerMessage inputs_message(const Case& c, const std::string& key) {
  const CaseRecipe& r = c.recipe;
  const int64_t T = r.shape.tokens, H = r.shape.hidden, E = r.shape.experts;
  WorkerMessage m;
  m.header = {{"op", "put"}, {"kind", "inputs"}, {"key", key}};
  m.add_tensor("hidden_states", "bf16", {T, H}, c.hidden);
  m.add_tensor("router_logits", "f32", {T, E}, c.logits);
  if (!c.bias.empty())
    m.add_tensor("e_score_correction_bias", "f32", {static_cast<int64_t>(c.bias.size())}, c.bias);
  if (!c.token_ids.empty())
    m.add_tensor("token_ids", "i32", {static_cast<int64_t>(c.token_ids.size())}, c.token_ids);
  if (!c.hash_table.empty()) m.add_tensor("hash_table", "i32", {r.hash_vocab(), r.shape.top_k}, c.hash_table);
  m.add_tensor("a1_scale", "f32", {static_cast<int64_t>(c.a1_scale.size())}, c.a1_scale);
  m.add_tensor("a2_scale", "f32", {static_cast<int64_t>(c.a2_scale.size())}, c.a2_scale);
  return m;
}

// Stacked semantic weights: codes [E+S, N, K/2], scales [E+S, N, K/16], global_dequant [E+S]; bf16
// weights (weight_format bf16) as one bf16 tensor [E+S, N, K] per projection; MXFP4 weights as
// mx_codes [E+S, N, K/2] (two E2M1 codes a byte, low nibble = even column, as gpt-oss *.blocks) and
// mx_scales [E+S, N, K/32] (E8M0 bytes, as gpt-oss *.scales); FP8 block-scaled weights as fp8_codes
// [E+S, N, K] (E4M3) and fp8_scales [E+S, N/128, K/128] (fp32 multipliers, DeepSeek-V3 weight_scale_inv).
// Expert biases (recipe expert_bias) as b_gate, b_up [E+S, I] and b_down [E+S, H] (fp32 holding bf16 values).
WorkerMessage weights_message(const Case& c, const std::string& key) {
  WorkerMessage m;
  m.header = {{"op", "put"}, {"kind", "weights"}, {"key", key}};
  const int64_t n = static_cast<int64_t>(c.experts.size());
  if (c.recipe.expert_bias && n > 0) {
    const auto stack_bias = [&](const char* name, auto pick) {
      std::vector<float> all;
      for (const ExpertWeights& e : c.experts) all.insert(all.end(), pick(e).begin(), pick(e).end());
      m.add_tensor(name, "f32", {n, static_cast<int64_t>(pick(c.experts[0]).size())}, all);
    };
    stack_bias("b_gate", [](const ExpertWeights& e) -> const std::vector<float>& { return e.gate_bias; });
    stack_bias("b_up", [](const ExpertWeights& e) -> const std::vector<float>& { return e.up_bias; });
    stack_bias("b_down", [](const ExpertWeights& e) -> const std::vector<float>& { return e.down_bias; });
  }
  if (c.recipe.quant.weights == WeightFormat::kBf16) {
    const auto stack_bf16 = [&](const char* name, auto pick) {
      if (n == 0) return;
      const Bf16Matrix& first = pick(c.experts[0]);
      std::vector<uint16_t> bits;
      bits.reserve(static_cast<size_t>(n * first.rows * first.cols));
      for (const ExpertWeights& e : c.experts)
        bits.insert(bits.end(), pick(e).bits.begin(), pick(e).bits.end());
      m.add_tensor(name, "bf16", {n, first.rows, first.cols}, bits);
    };
    stack_bf16("w_gate", [](const ExpertWeights& e) -> const Bf16Matrix& { return e.bf16.gate; });
    stack_bf16("w_up", [](const ExpertWeights& e) -> const Bf16Matrix& { return e.bf16.up; });
    stack_bf16("w_down", [](const ExpertWeights& e) -> const Bf16Matrix& { return e.bf16.down; });
    return m;
  }
  if (c.recipe.quant.weights == WeightFormat::kFp8Block) {
    const auto stack_fp8 = [&](const char* name, auto pick) {
      if (n == 0) return;
      const Fp8BlockQuantized& first = pick(c.experts[0]);
      std::vector<uint8_t> codes;
      std::vector<float> scales;
      codes.reserve(static_cast<size_t>(n) * first.codes.size());
      scales.reserve(static_cast<size_t>(n) * first.scales.size());
      for (const ExpertWeights& e : c.experts) {
        codes.insert(codes.end(), pick(e).codes.begin(), pick(e).codes.end());
        scales.insert(scales.end(), pick(e).scales.begin(), pick(e).scales.end());
      }
      m.add_tensor(std::string(name) + ".fp8_codes", "e4m3", {n, first.rows, first.cols}, codes);
      m.add_tensor(std::string(name) + ".fp8_scales", "f32", {n, first.scale_rows, first.scale_cols}, scales);
    };
    stack_fp8("w_gate", [](const ExpertWeights& e) -> const Fp8BlockQuantized& { return e.fp8.gate; });
    stack_fp8("w_up", [](const ExpertWeights& e) -> const Fp8BlockQuantized& { return e.fp8.up; });
    stack_fp8("w_down", [](const ExpertWeights& e) -> const Fp8BlockQuantized& { return e.fp8.down; });
    return m;
  }
  if (c.recipe.quant.weights == WeightFormat::kMxfp4) {
    const auto stack_mx = [&](const char* name, auto pick) {
      if (n == 0) return;
      const Mxfp4Quantized& first = pick(c.experts[0]);
      std::vector<uint8_t> codes, scales;
      for (const ExpertWeights& e : c.experts) {
        const std::vector<uint8_t> packed = pack_fp4(pick(e).codes);
        codes.insert(codes.end(), packed.begin(), packed.end());
        scales.insert(scales.end(), pick(e).scales.begin(), pick(e).scales.end());
      }
      m.add_tensor(std::string(name) + ".mx_codes", "u8", {n, first.rows, first.cols / 2}, codes);
      m.add_tensor(std::string(name) + ".mx_scales", "u8", {n, first.rows, first.scale_cols}, scales);
    };
    stack_mx("w_gate", [](const ExpertWeights& e) -> const Mxfp4Quantized& { return e.mx.gate; });
    stack_mx("w_up", [](const ExpertWeights& e) -> const Mxfp4Quantized& { return e.mx.up; });
    stack_mx("w_down", [](const ExpertWeights& e) -> const Mxfp4Quantized& { return e.mx.down; });
    return m;
  }
  const auto stack = [&](const char* name, auto pick) {
    if (n == 0) return;
    const Nvfp4Matrix& first = pick(c.experts[0]);
    const int64_t rows = first.rows, cols = first.cols;
    std::vector<uint8_t> codes, scales;
    std::vector<float> globals;
    codes.reserve(static_cast<size_t>(n * rows * cols / 2));
    scales.reserve(static_cast<size_t>(n * rows * cols / kNvfp4BlockSize));
    for (const ExpertWeights& e : c.experts) {
      const Nvfp4Matrix& w = pick(e);
      codes.insert(codes.end(), w.packed.begin(), w.packed.end());
      scales.insert(scales.end(), w.scales.begin(), w.scales.end());
      globals.push_back(w.global_dequant);
    }
    m.add_tensor(std::string(name) + ".codes", "u8", {n, rows, cols / 2}, codes);
    m.add_tensor(std::string(name) + ".scales", "e4m3", {n, rows, cols / kNvfp4BlockSize}, scales);
    m.add_tensor(std::string(name) + ".global_dequant", "f32", {n}, globals);
  };
  stack("w_gate", [](const ExpertWeights& e) -> const Nvfp4Matrix& { return e.gate; });
  stack("w_up", [](const ExpertWeights& e) -> const Nvfp4Matrix& { return e.up; });
  stack("w_down", [](const ExpertWeights& e) -> const Nvfp4Matrix& { return e.down; });
  return m;
}

// What the worker said about the kernel (python/moefuzz/worker.py, "hello").
struct PythonKernelInfo {
  std::string name, profile, description, device, tensors;
  KernelClaims claims;
  bool layer = false, has_supports = false;
  std::vector<Stage> stages;
  std::vector<std::string> expected_killers;  // a Python mutant's declared killers
  std::vector<std::string> weight_formats;    // the weight formats its stages / layer read (default nvfp4)
  bool expert_bias = false;                   // its GEMMs add the expert biases (recipe expert_bias)
  bool implements(Stage s) const { return std::find(stages.begin(), stages.end(), s) != stages.end(); }
  bool needs_weights() const { return layer || implements(Stage::kGemm1) || implements(Stage::kGemm2); }
};

class PythonKernel;

// The Python kernel's stages behind the composition seam; one RPC per stage call.
class PythonStages : public ExternalStages {
 public:
  PythonStages(const PythonKernel& k, const Case& c, const json& config) : k_(k), c_(c), config_(config) {}
  bool implements(Stage s) const override;
  std::string route(RoutingDecision& r) override;
  std::string quantize(std::span<const float> input, int64_t K, std::span<const float> row_scale,
                       QuantizedRows& q) override;
  std::string gemm1(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm("gemm1", r, a, out);
  }
  std::string activation(std::span<const float> g1, int64_t rows, std::span<float> out) override;
  std::string gemm2(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm("gemm2", r, a, out);
  }
  std::string combine(std::span<const float> g2, const RoutingDecision& r, std::span<float> output) override;

 private:
  std::string gemm(const char* stage, const RoutingDecision& r, const GemmInput& a, std::span<float> out);
  const PythonKernel& k_;
  const Case& c_;
  const json& config_;
};

class PythonKernel : public Kernel {
 public:
  PythonKernel(std::string spec, std::string target, std::chrono::milliseconds timeout)
      : spec_(std::move(spec)), timeout_(timeout), worker_({.spec = std::move(target)}) {
    describe(worker_.hello());
  }
  ~PythonKernel() override {
    const char* env = std::getenv("MOEFUZZ_BRIDGE_STATS");
    if (env != nullptr && std::string(env) == "1")
      std::fprintf(
          stderr,
          "python bridge %s: %lld requests, %d worker start(s), %.3f s round trips, %.3f s in the kernel, "
          "%.3f s bridge\n",
          spec_.c_str(), static_cast<long long>(stats_.requests), worker_.starts(), stats_.round_trip_s,
          stats_.kernel_s, stats_.round_trip_s - stats_.kernel_s);
  }
  std::string name() const override { return info_.name; }
  std::string profile() const override { return info_.profile; }
  std::string description() const override {
    std::string stages = info_.layer ? "layer" : "";
    for (Stage s : info_.stages) stages += (stages.empty() ? "" : ",") + std::string(stage_name(s));
    return (info_.description.empty() ? std::string("Python kernel") : info_.description) + " [" + spec_ +
           "; " + info_.tensors + " on " + info_.device + "; stages: " + stages + "]";
  }
  KernelClaims claims() const override { return info_.claims; }
  std::vector<std::string> expected_killers() const override { return info_.expected_killers; }

  std::string supports(const CaseRecipe& recipe) const override {
    if (std::string why = validate(recipe); !why.empty()) return why;
    const std::string format(name_of(recipe.quant.weights));
    if (info_.needs_weights() && std::find(info_.weight_formats.begin(), info_.weight_formats.end(),
                                           format) == info_.weight_formats.end())
      return "python: the kernel reads " + format + " weights only if it lists \"" + format +
             "\" in weight_formats (it lists: " + fmt::format("{}", fmt::join(info_.weight_formats, ", ")) +
             ")";
    if (info_.needs_weights() && recipe.expert_bias && !info_.expert_bias)
      return "python: the case has expert biases (expert_bias); the kernel adds them only if it sets "
             "expert_bias = True";
    if (!info_.layer) {
      if (std::string why = cpu::cpu_supports(recipe); !why.empty()) return "CPU stages: " + why;
    }
    if (!info_.has_supports) return "";
    WorkerMessage m;
    m.header = {{"op", "supports"}, {"config", config_of(recipe, claimed_profile(), info_.profile, 0)}};
    const WorkerMessage reply = call(m, 1 << 20);
    const json& reason = reply.header["reason"];
    if (reason.is_null()) return "";
    const std::string why = reason.is_string() ? reason.get<std::string>() : reason.dump();
    return "python: " + (why.empty() ? std::string("(no reason given)") : why);
  }

  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    const CaseRecipe& r = c.recipe;
    const int64_t T = r.shape.tokens, H = r.shape.hidden;
    const std::span<float> y = output_span(opts, out.output, T * H);
    std::lock_guard<std::mutex> lock(mutex_);
    inputs_key_ = inputs_key(c);
    weights_key_ = info_.needs_weights() ? weights_key(c) : "";
    case_ = &c;
    const json config = config_of(r, claimed_profile(), info_.profile, opts.tactic);
    if (info_.layer) {
      run_whole_layer(c, config, out, y);
      return;
    }
    PythonStages stages(*this, c, config);
    LayerResult res;
    const std::string err = run_composed(*claimed_profile(), c, opts, stages, res, y);
    if (!err.empty())
      throw KernelFault(FaultKind::kPluginError, "Python kernel '" + spec_ + "': plugin-error: " + err);
    std::vector<float> kept = std::move(out.output);
    out = std::move(res);
    out.output = std::move(kept);
  }

  // One stage call: sends the case's inputs and weights first when the worker lacks them. Returns the
  // reply's tensors checked against `expect` (name -> dtype and shape); a Python-side error becomes a
  // KernelFault of its class.
  WorkerMessage stage_call(const std::string& stage, const json& config, WorkerMessage args,
                           size_t max_reply_bytes) const {
    args.header["op"] = "call";
    args.header["stage"] = stage;
    args.header["config"] = config;
    args.header["inputs"] = inputs_key_;
    if (!weights_key_.empty()) args.header["weights"] = weights_key_;
    // The worker answers "missing" for a key it does not hold (new content, or a restarted worker):
    // send it and ask again. Two rounds cover inputs and weights.
    for (int round = 0; round < 3; ++round) {
      WorkerMessage reply = call(args, max_reply_bytes);
      if (reply.header.value("ok", false)) return reply;
      if (reply.header.value("class", "") != "missing") {
        raise(stage, reply.header);
      }
      const std::string kind = reply.header.value("kind", "");
      if (kind != "inputs" && kind != "weights") break;
      const WorkerMessage put =
          call(kind == "inputs" ? inputs_message(*case_, inputs_key_) : weights_message(*case_, weights_key_),
               1 << 20);
      if (!put.header.value("ok", false)) raise("receiving the case's " + kind, put.header);
    }
    throw KernelFault(
        FaultKind::kBadResult,
        "Python kernel '" + spec_ + "': bad-result: the worker kept asking for tensors during " + stage);
  }

  // Copies reply tensor `name` (dtype, exact element count) into `dst`.
  template <class T>
  void take(const WorkerMessage& reply, const std::string& stage, const std::string& name, const char* dtype,
            std::vector<int64_t> shape, T* dst) const {
    for (const WireTensor& t : reply.tensors()) {
      if (t.name != name) continue;
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      if (t.dtype != dtype || t.shape != shape || t.bytes != static_cast<size_t>(count) * sizeof(T)) {
        json want = shape, got = t.shape;
        throw KernelFault(FaultKind::kBadResult, "Python kernel '" + spec_ + "': bad-result: " + stage +
                                                     " returned " + name + " as " + t.dtype + " " +
                                                     got.dump() + ", expected " + dtype + " " + want.dump());
      }
      std::memcpy(dst, reply.payload.data() + t.offset, t.bytes);
      return;
    }
    throw KernelFault(FaultKind::kBadResult,
                      "Python kernel '" + spec_ + "': bad-result: " + stage + " returned no " + name);
  }

 private:
  const Profile* claimed_profile() const { return profile_; }

  WorkerMessage call(const WorkerMessage& m, size_t max_reply_bytes) const {
    const int starts = worker_.starts();
    const auto t0 = std::chrono::steady_clock::now();
    WorkerMessage reply = worker_.request(m, timeout_, max_reply_bytes);
    stats_.round_trip_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++stats_.requests;
    if (reply.header.contains("kernel_seconds") && reply.header["kernel_seconds"].is_number())
      stats_.kernel_s += reply.header["kernel_seconds"].get<double>();
    if (worker_.starts() != starts) check_same_kernel();
    return reply;
  }

  // A restarted worker must describe the same kernel (a module whose import depends on state could
  // otherwise change the kernel under test silently).
  void check_same_kernel() const {
    PythonKernelInfo again = parse_info(worker_.hello());
    if (again.name != info_.name || again.profile != info_.profile || again.stages != info_.stages ||
        again.layer != info_.layer)
      throw InputError("Python kernel '" + spec_ + "' described itself differently after a worker restart");
  }

  [[noreturn]] void raise(const std::string& stage, const json& h) const {
    const std::string cls = h.value("class", "error");
    std::string msg = h.value("message", std::string("(no message)"));
    if (h.contains("traceback") && h["traceback"].is_string())
      msg += "\n" + h["traceback"].get<std::string>();
    const std::string what = "Python kernel '" + spec_ + "': ";
    // A CUDA error leaves the context unusable, an OOM may leave it fragmented: start afresh.
    if (cls == "device-error" || cls == "oom") worker_.stop();
    if (cls == "oom") throw KernelFault(FaultKind::kOutOfMemory, what + "oom: " + stage + ": " + msg);
    if (cls == "device-error")
      throw KernelFault(FaultKind::kDeviceError, what + "device-error: " + stage + ": " + msg);
    if (cls == "bad-result")
      throw KernelFault(FaultKind::kBadResult, what + "bad-result: " + stage + ": " + msg);
    if (cls == "usage") throw InputError(what + msg);
    throw KernelFault(FaultKind::kPluginError, what + "plugin-error: " + stage + " raised " + msg);
  }

  PythonKernelInfo parse_info(const json& hello) const {
    if (hello.contains("error")) throw InputError(hello["error"].get<std::string>());
    PythonKernelInfo info;
    try {
      const json& k = hello.at("kernel");
      info.name = k.at("name").get<std::string>();
      info.profile = k.at("profile").get<std::string>();
      info.description = k.value("description", std::string());
      info.device = k.value("device", std::string("cpu"));
      info.tensors = k.value("tensors", std::string("numpy"));
      info.claims.deterministic = k.value("deterministic", true);
      info.claims.batch_invariant = k.value("batch_invariant", true);
      info.claims.tactics = k.value("tactics", 1);
      info.has_supports = k.value("supports", false);
      info.expected_killers = k.value("expected_killers", std::vector<std::string>{});
      info.weight_formats = k.value("weight_formats", std::vector<std::string>{"nvfp4"});
      info.expert_bias = k.value("expert_bias", false);
      for (const json& s : k.at("stages")) {
        const std::string n = s.get<std::string>();
        if (n == "layer") {
          info.layer = true;
          continue;
        }
        bool known = false;
        for (Stage st : {Stage::kRoute, Stage::kQuantize, Stage::kGemm1, Stage::kActivation, Stage::kGemm2,
                         Stage::kCombine})
          if (n == stage_name(st)) info.stages.push_back(st), known = true;
        if (!known) throw InputError("unknown stage '" + n + "'");
      }
    } catch (const InputError& e) {
      throw InputError("Python kernel '" + spec_ + "': " + e.what());
    } catch (const std::exception& e) {
      throw InputError("Python kernel '" + spec_ + "': malformed description from the worker: " + e.what());
    }
    if (!info.layer && info.stages.empty())
      throw InputError(
          "Python kernel '" + spec_ +
          "' implements no stage: define layer(case) or one of route, quantize, gemm1, activation, "
          "gemm2, combine (docs/python.md)");
    if (info.claims.tactics < 1 || info.claims.tactics > 64)
      throw InputError("Python kernel '" + spec_ + "': tactics = " + std::to_string(info.claims.tactics) +
                       ", expected 1..64");
    return info;
  }

  void describe(const json& hello) {
    info_ = parse_info(hello);
    profile_ = &profile_by_name(info_.profile);  // InputError for an unknown profile, with the known ones
  }

  void run_whole_layer(const Case& c, const json& config, LayerResult& out, std::span<float> y) const {
    const CaseRecipe& r = c.recipe;
    const int64_t T = r.shape.tokens, H = r.shape.hidden, slots = r.slots();
    // Room for the optional FP8 exposures (codes and scales of FC1 and FC2 per expanded row).
    const size_t fp8_bytes = r.quant.activations == ActivationFormat::kFp8Group
                                 ? static_cast<size_t>(T * slots * (H + r.shape.inter)) * (1 + 4)
                                 : 0;
    const size_t max_reply = static_cast<size_t>(T * H + 2 * T * slots) * 4 + fp8_bytes + (1 << 20);
    const WorkerMessage reply = stage_call("layer", config, WorkerMessage{}, max_reply);
    take(reply, "layer", "output", "f32", {T, H}, y.data());
    out.routing = RoutingDecision{};
    out.routing.tokens = T;
    out.routing.slots = slots;
    out.routing.ids.resize(static_cast<size_t>(T * slots));
    out.routing.weights.resize(static_cast<size_t>(T * slots));
    take(reply, "layer", "topk_ids", "i32", {T, slots}, out.routing.ids.data());
    take(reply, "layer", "topk_weights", "f32", {T, slots}, out.routing.weights.data());
    out.fc1_input.reset(), out.fc2_input.reset(), out.gemm1.reset(), out.activation.reset(),
        out.gemm2.reset();
    out.shared_output.clear();
    // FP8 activations the layer chose to expose (python/moefuzz/worker.py `_exposed_fp8`): the oracle
    // admits them and conditions the GEMMs on them.
    out.fc1_fp8.reset(), out.fc2_fp8.reset();
    // tensors() parses the reply into a new vector on each call: one copy, or the search would pair the
    // begin of one temporary with the end of another (a crash when the layer exposes nothing).
    const std::vector<WireTensor> sent = reply.tensors();
    const auto exposed = [&](const char* key, int64_t k, std::optional<Fp8GroupQuantized>& dst) {
      const std::string codes = std::string(key) + ".codes";
      const bool present =
          std::any_of(sent.begin(), sent.end(), [&](const WireTensor& t) { return t.name == codes; });
      if (!present || r.quant.activations != ActivationFormat::kFp8Group) return;
      Fp8GroupQuantized q;
      q.rows = T * slots;
      q.cols = k;
      q.group = kFp8ActivationGroup;
      q.codes.resize(static_cast<size_t>(q.rows * k));
      q.scales.resize(static_cast<size_t>(q.rows * (k / kFp8ActivationGroup)));
      take(reply, "layer", codes, "u8", {q.rows, k}, q.codes.data());
      take(reply, "layer", std::string(key) + ".scales", "f32", {q.rows, k / kFp8ActivationGroup},
           q.scales.data());
      dst = std::move(q);
    };
    exposed("fc1_fp8", H, out.fc1_fp8);
    exposed("fc2_fp8", r.shape.inter, out.fc2_fp8);
  }

  friend class PythonStages;
  // Where the time of the bridge goes (MOEFUZZ_BRIDGE_STATS=1 prints it when the kernel is destroyed):
  // round trips include the kernel's own time, which the worker measures; the rest is the bridge.
  struct BridgeStats {
    int64_t requests = 0;
    double round_trip_s = 0, kernel_s = 0;
  };
  mutable BridgeStats stats_;
  std::string spec_;
  std::chrono::milliseconds timeout_;
  mutable PythonWorker worker_;
  mutable std::mutex mutex_;
  PythonKernelInfo info_;
  const Profile* profile_ = nullptr;
  // The case being run (set under mutex_ by run_layer, read by the stage calls it makes).
  mutable std::string inputs_key_, weights_key_;
  mutable const Case* case_ = nullptr;
};

bool PythonStages::implements(Stage s) const { return k_.info_.implements(s); }

std::string PythonStages::route(RoutingDecision& r) {
  const size_t max_reply = static_cast<size_t>(r.tokens * r.slots) * 8 + (1 << 20);
  const WorkerMessage reply = k_.stage_call("route", config_, WorkerMessage{}, max_reply);
  k_.take(reply, "route", "topk_ids", "i32", {r.tokens, r.slots}, r.ids.data());
  k_.take(reply, "route", "topk_weights", "f32", {r.tokens, r.slots}, r.weights.data());
  return "";
}

std::string PythonStages::quantize(std::span<const float> input, int64_t K, std::span<const float> row_scale,
                                   QuantizedRows& q) {
  const int64_t R = static_cast<int64_t>(row_scale.size());
  WorkerMessage args;
  args.add_tensor("x", "f32", {R, K}, input.data(), input.size_bytes());
  args.add_tensor("global_scale", "f32", {R}, row_scale.data(), row_scale.size_bytes());
  const size_t max_reply = q.packed.size() + q.scales.size() + (1 << 20);
  const WorkerMessage reply = k_.stage_call("quantize", config_, std::move(args), max_reply);
  k_.take(reply, "quantize", "codes", "u8", {R, K / 2}, q.packed.data());
  k_.take(reply, "quantize", "scales", "u8", {R, K / kNvfp4BlockSize}, q.scales.data());
  return "";
}

std::string PythonStages::gemm(const char* stage, const RoutingDecision& r, const GemmInput& a,
                               std::span<float> out) {
  WorkerMessage args;
  args.add_tensor("topk_ids", "i32", {r.tokens, r.slots}, r.ids);
  if (a.nvfp4 != nullptr) {
    args.add_tensor("a_codes", "u8", {a.rows, a.cols / 2}, a.nvfp4->packed);
    args.add_tensor("a_scales", "e4m3", {a.rows, a.cols / kNvfp4BlockSize}, a.nvfp4->scales);
  } else {
    args.add_tensor("a_codes", "bf16", {a.rows, a.cols}, a.bf16.data(), a.bf16.size_bytes());
  }
  const int64_t N = static_cast<int64_t>(out.size()) / std::max<int64_t>(a.rows, 1);
  const WorkerMessage reply = k_.stage_call(stage, config_, std::move(args), out.size_bytes() + (1 << 20));
  k_.take(reply, stage, "out", "f32", {a.rows, N}, out.data());
  return "";
}

std::string PythonStages::activation(std::span<const float> g1, int64_t rows, std::span<float> out) {
  const int64_t I = c_.recipe.shape.inter;
  WorkerMessage args;
  args.add_tensor("gemm1_out", "f32", {rows, 2 * I}, g1.data(), g1.size_bytes());
  const WorkerMessage reply =
      k_.stage_call("activation", config_, std::move(args), out.size_bytes() + (1 << 20));
  k_.take(reply, "activation", "out", "f32", {rows, I}, out.data());
  return "";
}

std::string PythonStages::combine(std::span<const float> g2, const RoutingDecision& r,
                                  std::span<float> output) {
  const int64_t H = c_.recipe.shape.hidden;
  WorkerMessage args;
  args.add_tensor("gemm2_out", "f32", {r.tokens * r.slots, H}, g2.data(), g2.size_bytes());
  args.add_tensor("topk_ids", "i32", {r.tokens, r.slots}, r.ids);
  args.add_tensor("topk_weights", "f32", {r.tokens, r.slots}, r.weights);
  const WorkerMessage reply =
      k_.stage_call("combine", config_, std::move(args), output.size_bytes() + (1 << 20));
  k_.take(reply, "combine", "output", "f32", {r.tokens, H}, output.data());
  return "";
}

}  // namespace

bool is_python_kernel_spec(const std::string& name) { return name.rfind("py:", 0) == 0; }

std::unique_ptr<Kernel> make_python_kernel(const std::string& spec) {
  // py:MODULE:ATTR, MODULE a dotted Python module path, ATTR an attribute path inside it.
  static const std::regex kSpec(
      R"(py:([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_.]*))");
  if (!std::regex_match(spec, kSpec))
    throw InputError("kernel '" + spec +
                     "': expected py:MODULE:ATTR, e.g. py:examples.python.torch_moe:layer (docs/python.md)");
  return std::make_unique<PythonKernel>(spec, spec.substr(3), kernel_timeout_from_env());
}

}  // namespace moefuzz

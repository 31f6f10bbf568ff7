#include "kernels/device_plugin.h"

#include "core/errors.h"

#ifdef MOEFUZZ_WITH_CUDA
#include <memory>
#include <vector>

#include "kernels/composed_pipeline.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/isolated_run.h"
#include "kernels/plugin_case_view.h"
#endif

namespace moefuzz {

#ifndef MOEFUZZ_WITH_CUDA

bool device_plugins_built() { return false; }

void require_usable_device(const LoadedPlugin& plugin, std::chrono::milliseconds) {
  throw InputError("plugin '" + plugin.path +
                   "' asks for device buffers (wants_device = 1): not supported in this build (moefuzz was "
                   "built without the CUDA runtime); rebuild moefuzz with CUDA or implement the host path "
                   "(wants_device = 0)");
}

std::string run_device_plugin(const LoadedPlugin& plugin, const Profile*, const Case&, const RunOptions&,
                              LayerResult&, std::span<float>, int64_t) {
  throw InputError(
      "plugin '" + plugin.path +
      "' asks for device buffers (wants_device = 1): moefuzz was built without the CUDA runtime");
}

#else

namespace {

using cuda::DeviceInput;
using cuda::DeviceOutput;
using cuda::DeviceSession;

constexpr uint32_t kIdsFill = 0xFFFFFFFFu;  // ids pre-filled with -1, as on the host

// Device copies of tensors the plugin must leave alone; verify() names the first one it changed.
class DeviceInputs {
 public:
  explicit DeviceInputs(const DeviceSession& s) : s_(s) {}
  moefuzz_tensor add(const moefuzz_tensor& host, const std::string& name) {
    if (host.data == nullptr || host.dtype == MOEFUZZ_DTYPE_NONE) return host;
    inputs_.push_back(std::make_unique<DeviceInput>(s_, name, host.data, tensor_bytes(host)));
    moefuzz_tensor d = host;
    d.data = inputs_.back()->data();
    return d;
  }
  void verify() const {
    for (const auto& in : inputs_)
      if (!in->unchanged())
        throw KernelFault(FaultKind::kBadResult, "bad-result: modified its input tensor '" + in->name() +
                                                     "' on the device (inputs are read-only)");
  }

 private:
  const DeviceSession& s_;
  std::vector<std::unique_ptr<DeviceInput> > inputs_;
};

// The case on the device: desc is the host view with every tensor's data a device pointer,
// device = 1, the stream and the device ordinal set. expert_weights stays a host array.
class DeviceCase {
 public:
  DeviceCase(const DeviceSession& s, const CaseView& host) : inputs(s), experts_(host.experts) {
    desc = host.desc;
    desc.hidden_states = inputs.add(host.desc.hidden_states, "hidden_states");
    desc.logits = inputs.add(host.desc.logits, "logits");
    desc.bias = inputs.add(host.desc.bias, "bias");
    desc.token_ids = inputs.add(host.desc.token_ids, "token_ids");
    desc.hash_table = inputs.add(host.desc.hash_table, "hash_table");
    desc.a1_scale = inputs.add(host.desc.a1_scale, "a1_scale");
    desc.a2_scale = inputs.add(host.desc.a2_scale, "a2_scale");
    for (size_t e = 0; e < experts_.size(); ++e) {
      const std::string n = "expert_weights[" + std::to_string(e) + "].";
      for (auto [m, part] :
           {std::pair{&experts_[e].gate, "gate"}, {&experts_[e].up, "up"}, {&experts_[e].down, "down"}}) {
        m->codes = inputs.add(m->codes, n + part + ".codes");
        m->scales = inputs.add(m->scales, n + part + ".scales");
      }
    }
    desc.expert_weights = experts_.data();
    desc.device = 1;
    desc.stream = s.stream();
    desc.device_ordinal = s.ordinal();
  }
  moefuzz_case_desc desc{};
  DeviceInputs inputs;

 private:
  std::vector<moefuzz_expert> experts_;
};

// After a plugin call: CUDA errors, then the plugin's message, then bands and inputs.
std::string finish_call(const DeviceSession& s, const char* stage, const std::string& msg,
                        std::initializer_list<const DeviceOutput*> outputs, const DeviceInputs& case_inputs,
                        const DeviceInputs* stage_inputs, size_t skip_trailing_of_first = 0) {
  s.synchronize(stage);
  if (!msg.empty()) return msg;
  bool first = true;
  for (const DeviceOutput* o : outputs) {
    const std::string bad = o->band_violation(first ? skip_trailing_of_first : 0);
    first = false;
    if (!bad.empty()) throw KernelFault(FaultKind::kBadResult, "bad-result: out-of-bounds store: " + bad);
  }
  case_inputs.verify();
  if (stage_inputs != nullptr) stage_inputs->verify();
  return "";
}

template <class T>
void download_into(const DeviceOutput& o, std::vector<T>& host) {
  o.download(host.data(), host.size() * sizeof(T));
}

// The plugin's stages on device buffers behind the composition seam: each call uploads its operands,
// poisons its outputs on the device, calls, checks, and downloads the results.
class DeviceStages : public ExternalStages {
 public:
  DeviceStages(const LoadedPlugin& p, const DeviceSession& s, DeviceCase& dc, const RunOptions& opts)
      : p_(p), s_(s), dc_(dc), poison_(opts.poison_bits) {}
  bool implements(Stage st) const override {
    static constexpr uint32_t kBits[] = {MOEFUZZ_STAGE_ROUTE, MOEFUZZ_STAGE_QUANTIZE,
                                         MOEFUZZ_STAGE_GEMM1, MOEFUZZ_STAGE_ACTIVATION,
                                         MOEFUZZ_STAGE_GEMM2, MOEFUZZ_STAGE_COMBINE};
    return p_.implements(kBits[static_cast<int>(st)]);
  }
  std::string route(RoutingDecision& r) override {
    const size_t n = r.ids.size();
    DeviceOutput ids(s_, "route topk_ids", n * 4, kIdsFill), w(s_, "route topk_weights", n * 4, poison_);
    moefuzz_tensor ti = make_tensor(ids.data(), MOEFUZZ_DTYPE_I32, {r.tokens, r.slots});
    moefuzz_tensor tw = make_tensor(w.data(), MOEFUZZ_DTYPE_F32, {r.tokens, r.slots});
    s_.ready();
    const std::string msg = stage_message("route", p_.api->route(&dc_.desc, &ti, &tw));
    if (std::string e = finish_call(s_, "route", msg, {&ids, &w}, dc_.inputs, nullptr); !e.empty()) return e;
    download_into(ids, r.ids);
    download_into(w, r.weights);
    return "";
  }
  std::string quantize(std::span<const float> input, int64_t K, std::span<const float> row_scale,
                       QuantizedRows& q) override {
    const int64_t R = static_cast<int64_t>(row_scale.size());
    DeviceInputs in(s_);
    moefuzz_tensor x = in.add(make_tensor(input.data(), MOEFUZZ_DTYPE_F32, {R, K}), "quantize input");
    moefuzz_tensor gs =
        in.add(make_tensor(row_scale.data(), MOEFUZZ_DTYPE_F32, {R}), "quantize global_scale");
    DeviceOutput codes(s_, "quantize codes", q.packed.size(), 0),
        scales(s_, "quantize scales", q.scales.size(), 0);
    codes.upload_body(q.packed.data());  // the framework's fill (composed_pipeline.cpp), as on the host
    scales.upload_body(q.scales.data());
    moefuzz_tensor tc = make_tensor(codes.data(), MOEFUZZ_DTYPE_FP4X2, {R, K / 2});
    moefuzz_tensor ts = make_tensor(scales.data(), MOEFUZZ_DTYPE_E4M3, {R, K / kNvfp4BlockSize});
    s_.ready();
    const std::string msg = stage_message("quantize", p_.api->quantize(&dc_.desc, &x, &gs, &tc, &ts));
    if (std::string e = finish_call(s_, "quantize", msg, {&codes, &scales}, dc_.inputs, &in); !e.empty())
      return e;
    download_into(codes, q.packed);
    download_into(scales, q.scales);
    return "";
  }
  std::string gemm1(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm(MOEFUZZ_STAGE_GEMM1, r, a, out);
  }
  std::string activation(std::span<const float> g1, int64_t rows, std::span<float> out) override {
    const int64_t I = dc_.desc.inter;
    DeviceInputs in(s_);
    moefuzz_tensor x =
        in.add(make_tensor(g1.data(), MOEFUZZ_DTYPE_F32, {rows, 2 * I}), "activation gemm1_out");
    DeviceOutput o(s_, "activation out", out.size_bytes(), poison_);
    moefuzz_tensor to = make_tensor(o.data(), MOEFUZZ_DTYPE_F32, {rows, I});
    s_.ready();
    const std::string msg = stage_message("activation", p_.api->activation(&dc_.desc, &x, &to));
    if (std::string e = finish_call(s_, "activation", msg, {&o}, dc_.inputs, &in); !e.empty()) return e;
    o.download(out.data(), out.size_bytes());
    return "";
  }
  std::string gemm2(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm(MOEFUZZ_STAGE_GEMM2, r, a, out);
  }
  std::string combine(std::span<const float> g2, const RoutingDecision& r, std::span<float> output) override {
    const int64_t T = r.tokens, H = dc_.desc.hidden;
    DeviceInputs in(s_);
    moefuzz_tensor x =
        in.add(make_tensor(g2.data(), MOEFUZZ_DTYPE_F32, {T * r.slots, H}), "combine gemm2_out");
    moefuzz_tensor ids =
        in.add(make_tensor(r.ids.data(), MOEFUZZ_DTYPE_I32, {T, r.slots}), "combine topk_ids");
    moefuzz_tensor w =
        in.add(make_tensor(r.weights.data(), MOEFUZZ_DTYPE_F32, {T, r.slots}), "combine topk_weights");
    DeviceOutput o(s_, "combine output", output.size_bytes(), poison_);
    moefuzz_tensor to = make_tensor(o.data(), MOEFUZZ_DTYPE_F32, {T, H});
    s_.ready();
    const std::string msg = stage_message("combine", p_.api->combine(&dc_.desc, &x, &ids, &w, &to));
    if (std::string e = finish_call(s_, "combine", msg, {&o}, dc_.inputs, &in); !e.empty()) return e;
    o.download(output.data(), output.size_bytes());
    return "";
  }

 private:
  std::string gemm(uint32_t which, const RoutingDecision& r, const GemmInput& a, std::span<float> out) {
    const GemmOperand host = gemm_operand(a);
    const char* stage = which == MOEFUZZ_STAGE_GEMM1 ? "gemm1" : "gemm2";
    DeviceInputs in(s_);
    moefuzz_tensor codes = in.add(host.codes, std::string(stage) + " a_codes");
    moefuzz_tensor scales = in.add(host.scales, std::string(stage) + " a_scales");
    moefuzz_tensor ids = in.add(make_tensor(r.ids.data(), MOEFUZZ_DTYPE_I32, {r.tokens, r.slots}),
                                std::string(stage) + " topk_ids");
    DeviceOutput o(s_, std::string(stage) + " out", out.size_bytes(), poison_);
    const int64_t N = static_cast<int64_t>(out.size()) / a.rows;
    moefuzz_tensor to = make_tensor(o.data(), MOEFUZZ_DTYPE_F32, {a.rows, N});
    s_.ready();
    const char* m = which == MOEFUZZ_STAGE_GEMM1 ? p_.api->gemm1(&dc_.desc, &ids, &codes, &scales, &to)
                                                 : p_.api->gemm2(&dc_.desc, &ids, &codes, &scales, &to);
    if (std::string e = finish_call(s_, stage, stage_message(stage, m), {&o}, dc_.inputs, &in); !e.empty())
      return e;
    o.download(out.data(), out.size_bytes());
    return "";
  }
  const LoadedPlugin& p_;
  const DeviceSession& s_;
  DeviceCase& dc_;
  uint32_t poison_;
};

}  // namespace

bool device_plugins_built() { return true; }

void require_usable_device(const LoadedPlugin& plugin, std::chrono::milliseconds timeout) {
  try {
    run_isolated("plugin '" + plugin.name + "' (" + plugin.path + "): device probe", 1, {timeout},
                 [](ResultWriter&) {
                   DeviceSession probe;  // InputError when no device is usable
                   return std::string();
                 });
  } catch (const InputError& e) {
    throw InputError("plugin '" + plugin.path + "': " + e.what());
  }
}

std::string run_device_plugin(const LoadedPlugin& plugin, const Profile* profile, const Case& c,
                              const RunOptions& opts, LayerResult& res, std::span<float> y, int64_t y_slack) {
  if (y_slack < 0 || static_cast<size_t>(y_slack) * 4 > cuda::kDeviceBandBytes)
    throw std::logic_error("run_device_plugin: the guarded band is wider than the device band");
  CaseView view(c.recipe, plugin.profile);
  view.attach(c, opts);
  DeviceSession session;  // InputError without a usable GPU
  DeviceCase dc(session, view);
  if (profile != nullptr) {
    DeviceStages stages(plugin, session, dc, opts);
    return run_composed(*profile, c, opts, stages, res, y);
  }
  const int64_t T = dc.desc.tokens, H = dc.desc.hidden, slots = dc.desc.slots;
  DeviceOutput out(session, "layer output", y.size_bytes(), opts.poison_bits);
  DeviceOutput ids(session, "layer topk_ids", res.routing.ids.size() * 4, kIdsFill);
  DeviceOutput w(session, "layer topk_weights", res.routing.weights.size() * 4, opts.poison_bits);
  moefuzz_layer_out o{};
  o.output = make_tensor(out.data(), MOEFUZZ_DTYPE_F32, {T, H});
  o.topk_ids = make_tensor(ids.data(), MOEFUZZ_DTYPE_I32, {T, slots});
  o.topk_weights = make_tensor(w.data(), MOEFUZZ_DTYPE_F32, {T, slots});
  session.ready();
  const std::string msg = stage_message("layer", plugin.api->layer(&dc.desc, &o));
  // The output's guarded trailing floats go back to the framework's CANARY check; the rest of the
  // bands is checked here.
  if (std::string e = finish_call(session, "layer", msg, {&out, &ids, &w}, dc.inputs, nullptr,
                                  static_cast<size_t>(y_slack) * 4);
      !e.empty())
    return e;
  out.download(y.data(), y.size_bytes() + static_cast<size_t>(y_slack) * 4);
  download_into(ids, res.routing.ids);
  download_into(w, res.routing.weights);
  return "";
}

#endif

}  // namespace moefuzz

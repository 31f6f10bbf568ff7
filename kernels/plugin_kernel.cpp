#include "kernels/plugin_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <span>

#include "core/bf16.h"
#include "core/cuda_in_process.h"
#include "core/errors.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "kernels/canary.h"
#include "kernels/composed_pipeline.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/device_plugin.h"
#include "kernels/plugin_case_view.h"

namespace moefuzz {
namespace {

// ---- The result sections (child -> parent) -------------------------------------------------------

enum class Section : uint32_t {
  kOutput = 1,
  kIds,
  kWeights,
  kFc1Codes,
  kFc1Scales,
  kFc2Codes,
  kFc2Scales,
  kGemm1,
  kActivation,
  kGemm2,
  kShared
};
constexpr int kSectionCount = 11;
struct SectionHeader {
  uint32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};

template <class T>
void put(ResultWriter& w, Section tag, const std::vector<T>& v) {
  SectionHeader h{static_cast<uint32_t>(tag), 0, v.size() * sizeof(T)};
  w.append(&h, sizeof h);
  w.append(v.data(), h.bytes);
}

void serialize(ResultWriter& w, const LayerResult& r, std::span<const float> output) {
  SectionHeader h{static_cast<uint32_t>(Section::kOutput), 0, output.size_bytes()};
  w.append(&h, sizeof h);
  w.append(output.data(), h.bytes);
  put(w, Section::kIds, r.routing.ids);
  put(w, Section::kWeights, r.routing.weights);
  if (r.fc1_input) {
    put(w, Section::kFc1Codes, r.fc1_input->packed);
    put(w, Section::kFc1Scales, r.fc1_input->scales);
  }
  if (r.fc2_input) {
    put(w, Section::kFc2Codes, r.fc2_input->packed);
    put(w, Section::kFc2Scales, r.fc2_input->scales);
  }
  if (r.gemm1) put(w, Section::kGemm1, *r.gemm1);
  if (r.activation) put(w, Section::kActivation, *r.activation);
  if (r.gemm2) put(w, Section::kGemm2, *r.gemm2);
  if (!r.shared_output.empty()) put(w, Section::kShared, r.shared_output);
}

// Element counts of every section for this case; the region is sized from them before the fork.
struct ResultSizes {
  int64_t output = 0, routing = 0, fc1_codes = 0, fc1_scales = 0, fc2_codes = 0, fc2_scales = 0;
  int64_t gemm1 = 0, activation = 0, gemm2 = 0, shared = 0;
  size_t max_bytes() const {
    const int64_t floats = output + 2 * routing + gemm1 + activation + gemm2 + shared;  // ids are 4 bytes too
    return static_cast<size_t>(floats * 4 + fc1_codes + fc1_scales + fc2_codes + fc2_scales) +
           kSectionCount * sizeof(SectionHeader);
  }
};

ResultSizes sizes_for(const CaseRecipe& r, int64_t output_elements) {
  const int64_t T = r.shape.tokens, H = r.shape.hidden, I = r.shape.inter, rows = T * r.slots();
  return {.output = output_elements,
          .routing = rows,
          .fc1_codes = rows * H / 2,
          .fc1_scales = rows * H / kNvfp4BlockSize,
          .fc2_codes = rows * I / 2,
          .fc2_scales = rows * I / kNvfp4BlockSize,
          .gemm1 = rows * 2 * I,
          .activation = rows * I,
          .gemm2 = rows * H,
          .shared = T * H};
}

// Parses what the child wrote; anything malformed is a bad result, never trusted.
class ResultParser {
 public:
  ResultParser(const std::vector<uint8_t>& bytes, std::string what) : what_(std::move(what)) {
    size_t at = 0;
    while (at < bytes.size()) {
      SectionHeader h{};
      if (bytes.size() - at < sizeof h) fail("truncated section header");
      std::memcpy(&h, bytes.data() + at, sizeof h);
      at += sizeof h;
      if (h.bytes > bytes.size() - at) fail("section longer than the result");
      sections_[h.tag] = {bytes.data() + at, static_cast<size_t>(h.bytes)};
      at += h.bytes;
    }
  }
  // Copies section `tag` into `out` if it is present with exactly `count` elements.
  template <class T>
  bool take(Section tag, int64_t count, std::vector<T>& out, bool required) {
    auto it = sections_.find(static_cast<uint32_t>(tag));
    if (it == sections_.end()) {
      if (required) fail("missing section " + std::to_string(static_cast<uint32_t>(tag)));
      return false;
    }
    if (it->second.size() != static_cast<size_t>(count) * sizeof(T)) fail("section of the wrong size");
    out.resize(static_cast<size_t>(count));
    std::memcpy(out.data(), it->second.data(), it->second.size());
    return true;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw KernelFault(FaultKind::kBadResult, what_ + ": bad-result: " + why);
  }
  std::string what_;
  std::map<uint32_t, std::span<const uint8_t>> sections_;
};

void deserialize(const std::vector<uint8_t>& bytes, const ResultSizes& n, const CaseRecipe& r,
                 const std::string& what, LayerResult& out, std::span<float> output) {
  ResultParser p(bytes, what);
  const int64_t rows = n.routing;
  std::vector<float> y;
  p.take(Section::kOutput, n.output, y, true);
  std::copy(y.begin(), y.end(), output.begin());
  out.routing.tokens = r.shape.tokens;
  out.routing.slots = r.slots();
  p.take(Section::kIds, rows, out.routing.ids, true);
  p.take(Section::kWeights, rows, out.routing.weights, true);
  QuantizedRows q;
  if (p.take(Section::kFc1Codes, n.fc1_codes, q.packed, false) &&
      p.take(Section::kFc1Scales, n.fc1_scales, q.scales, true)) {
    q.rows = rows;
    q.cols = r.shape.hidden;
    out.fc1_input = q;
  }
  QuantizedRows q2;
  if (p.take(Section::kFc2Codes, n.fc2_codes, q2.packed, false) &&
      p.take(Section::kFc2Scales, n.fc2_scales, q2.scales, true)) {
    q2.rows = rows;
    q2.cols = r.shape.inter;
    out.fc2_input = q2;
  }
  std::vector<float> v;
  if (p.take(Section::kGemm1, n.gemm1, v, false)) out.gemm1 = v;
  if (p.take(Section::kActivation, n.activation, v, false)) out.activation = v;
  if (p.take(Section::kGemm2, n.gemm2, v, false)) out.gemm2 = v;
  p.take(Section::kShared, n.shared, out.shared_output, false);
}

// ---- Runs (in the child) -------------------------------------------------------------------------

std::string run_whole_layer(const LoadedPlugin& p, CaseView& view, LayerResult& res,
                            std::span<float> output) {
  const int64_t T = view.desc.tokens, H = view.desc.hidden, slots = view.desc.slots;
  moefuzz_layer_out o{};
  o.output = make_tensor(output.data(), MOEFUZZ_DTYPE_F32, {T, H});
  o.topk_ids = make_tensor(res.routing.ids.data(), MOEFUZZ_DTYPE_I32, {T, slots});
  o.topk_weights = make_tensor(res.routing.weights.data(), MOEFUZZ_DTYPE_F32, {T, slots});
  return stage_message("layer", p.api->layer(&view.desc, &o));
}

// The plugin's stage functions behind the composition seam (kernels/composed_pipeline.h).
class PluginStages : public ExternalStages {
 public:
  PluginStages(const LoadedPlugin& p, CaseView& view) : p_(p), view_(view) {}
  bool implements(Stage s) const override {
    switch (s) {
      case Stage::kRoute:
        return p_.implements(MOEFUZZ_STAGE_ROUTE);
      case Stage::kQuantize:
        return p_.implements(MOEFUZZ_STAGE_QUANTIZE);
      case Stage::kGemm1:
        return p_.implements(MOEFUZZ_STAGE_GEMM1);
      case Stage::kActivation:
        return p_.implements(MOEFUZZ_STAGE_ACTIVATION);
      case Stage::kGemm2:
        return p_.implements(MOEFUZZ_STAGE_GEMM2);
      case Stage::kCombine:
        return p_.implements(MOEFUZZ_STAGE_COMBINE);
    }
    return false;
  }
  std::string route(RoutingDecision& r) override {
    moefuzz_tensor ids = make_tensor(r.ids.data(), MOEFUZZ_DTYPE_I32, {r.tokens, r.slots});
    moefuzz_tensor w = make_tensor(r.weights.data(), MOEFUZZ_DTYPE_F32, {r.tokens, r.slots});
    return stage_message("route", p_.api->route(&view_.desc, &ids, &w));
  }
  std::string quantize(std::span<const float> input, int64_t K, std::span<const float> row_scale,
                       QuantizedRows& q) override {
    const int64_t R = static_cast<int64_t>(row_scale.size());
    moefuzz_tensor in = make_tensor(input.data(), MOEFUZZ_DTYPE_F32, {R, K});
    moefuzz_tensor gs = make_tensor(row_scale.data(), MOEFUZZ_DTYPE_F32, {R});
    moefuzz_tensor codes = make_tensor(q.packed.data(), MOEFUZZ_DTYPE_FP4X2, {R, K / 2});
    moefuzz_tensor scales = make_tensor(q.scales.data(), MOEFUZZ_DTYPE_E4M3, {R, K / kNvfp4BlockSize});
    return stage_message("quantize", p_.api->quantize(&view_.desc, &in, &gs, &codes, &scales));
  }
  std::string gemm1(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm(MOEFUZZ_STAGE_GEMM1, r, a, out);
  }
  std::string activation(std::span<const float> g1, int64_t rows, std::span<float> out) override {
    const int64_t I = view_.desc.inter;
    moefuzz_tensor in = make_tensor(g1.data(), MOEFUZZ_DTYPE_F32, {rows, 2 * I});
    moefuzz_tensor o = make_tensor(out.data(), MOEFUZZ_DTYPE_F32, {rows, I});
    return stage_message("activation", p_.api->activation(&view_.desc, &in, &o));
  }
  std::string gemm2(const RoutingDecision& r, const GemmInput& a, std::span<float> out) override {
    return gemm(MOEFUZZ_STAGE_GEMM2, r, a, out);
  }
  std::string combine(std::span<const float> g2, const RoutingDecision& r, std::span<float> output) override {
    const int64_t T = r.tokens, H = view_.desc.hidden;
    moefuzz_tensor in = make_tensor(g2.data(), MOEFUZZ_DTYPE_F32, {T * r.slots, H});
    moefuzz_tensor ids = make_tensor(r.ids.data(), MOEFUZZ_DTYPE_I32, {T, r.slots});
    moefuzz_tensor w = make_tensor(r.weights.data(), MOEFUZZ_DTYPE_F32, {T, r.slots});
    moefuzz_tensor o = make_tensor(output.data(), MOEFUZZ_DTYPE_F32, {T, H});
    return stage_message("combine", p_.api->combine(&view_.desc, &in, &ids, &w, &o));
  }

 private:
  std::string gemm(uint32_t which, const RoutingDecision& r, const GemmInput& a, std::span<float> out) {
    GemmOperand op = gemm_operand(a);
    moefuzz_tensor ids = make_tensor(r.ids.data(), MOEFUZZ_DTYPE_I32, {r.tokens, r.slots});
    const int64_t N = static_cast<int64_t>(out.size()) / a.rows;
    moefuzz_tensor o = make_tensor(out.data(), MOEFUZZ_DTYPE_F32, {a.rows, N});
    if (which == MOEFUZZ_STAGE_GEMM1)
      return stage_message("gemm1", p_.api->gemm1(&view_.desc, &ids, &op.codes, &op.scales, &o));
    return stage_message("gemm2", p_.api->gemm2(&view_.desc, &ids, &op.codes, &op.scales, &o));
  }
  const LoadedPlugin& p_;
  CaseView& view_;
};

}  // namespace

PluginKernel::PluginKernel(std::shared_ptr<const LoadedPlugin> plugin, PluginKernelOptions options)
    : plugin_(std::move(plugin)), options_(options) {
  if (plugin_->wants_device) {
    // Its calls run in forked children, which cannot use CUDA once this process has initialized it.
    if (const std::string by = cuda_in_process(); !by.empty())
      throw InputError(
          "plugin '" + plugin_->path +
          "': device-memory plugin (wants_device = 1) cannot run in a process that uses CUDA itself (" + by +
          "); run it with --oracle-device cpu");
    require_usable_device(*plugin_, options_.timeout);  // InputError
  }
}

std::string PluginKernel::description() const {
  const std::string d = plugin_->description.empty() ? "plugin kernel" : plugin_->description;
  return d + " [" + plugin_->path + "; stages: " + plugin_->stage_list() + "]";
}

std::string PluginKernel::supports(const CaseRecipe& recipe) const {
  if (std::string why = validate(recipe); !why.empty()) return why;
  // The C ABI's case view carries NVFP4 weights only; a plugin that never reads weights (routing,
  // quantize, activation, combine stages) runs on any weight format.
  if (recipe.quant.weights != WeightFormat::kNvfp4 &&
      (plugin_->implements(MOEFUZZ_STAGE_LAYER) || plugin_->implements(MOEFUZZ_STAGE_GEMM1) ||
       plugin_->implements(MOEFUZZ_STAGE_GEMM2)))
    return "plugin: the C plugin ABI carries NVFP4 weights only (weight_format " +
           std::string(name_of(recipe.quant.weights)) + ")";
  if (!plugin_->implements(MOEFUZZ_STAGE_LAYER)) {
    if (std::string why = cpu::cpu_supports(recipe); !why.empty()) return "CPU stages: " + why;
  }
  if (plugin_->api->supports == nullptr) return "";
  const std::string what = "plugin '" + plugin_->name + "' (" + plugin_->path + ") supports()";
  // The reason is returned as bytes; 1 KiB bounds what a plugin can make us allocate.
  constexpr size_t kMaxReason = 1024;
  // Reply: one byte (1 = not supported), then the reason.
  const CaseView view(recipe, plugin_->profile);  // in this process: see run_isolated's rule
  std::vector<uint8_t> bytes = run_isolated(what, 1 + kMaxReason, {options_.timeout}, [&](ResultWriter& w) {
    const char* why = plugin_->api->supports(&view.desc);
    const uint8_t declined = why != nullptr;
    w.append(&declined, 1);
    if (why != nullptr) w.append(why, strnlen(why, kMaxReason));
    return std::string();
  });
  if (bytes.empty()) throw KernelFault(FaultKind::kBadResult, what + ": bad-result: empty reply");
  if (bytes[0] == 0) return "";
  const std::string why(bytes.begin() + 1, bytes.end());
  return "plugin: " + (why.empty() ? std::string("(no reason given)") : why);
}

void PluginKernel::run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const {
  const CaseRecipe& r = c.recipe;
  const int64_t T = r.shape.tokens, H = r.shape.hidden, rows = T * r.slots();
  const float poison = poison_value(opts);
  // The framework poisons the output (CANARY); when it passed neither a guarded buffer nor a sized
  // out.output, poison here so unwritten elements still show.
  if (opts.output_data == nullptr && out.output.size() != static_cast<size_t>(T * H))
    out.output.assign(static_cast<size_t>(T * H), poison);
  const std::span<float> y = output_span(opts, out.output, T * H);
  // A guarded buffer's trailing sentinel band travels with the output, so a plugin's overhanging
  // store is still seen by the canary check in this process.
  const std::span<float> y_with_band(
      y.data(), y.size() + static_cast<size_t>(opts.output_data ? opts.output_slack : 0));

  const Profile* profile = nullptr;
  if (!plugin_->implements(MOEFUZZ_STAGE_LAYER)) profile = &profile_by_name(plugin_->profile);  // InputError
  const ResultSizes sizes = sizes_for(r, static_cast<int64_t>(y_with_band.size()));
  const std::string what = "plugin '" + plugin_->name + "' (" + plugin_->path + ")";
  // Fork after the Case and its view are built: the child reads them, and writes its copy-on-write
  // copy of `out`. The view is built here, not in the child (run_isolated's rule on shared state).
  CaseView view(r, plugin_->profile);
  view.attach(c, opts);
  std::vector<uint8_t> bytes =
      run_isolated(what, sizes.max_bytes(), {options_.timeout}, [&](ResultWriter& w) {
        LayerResult res;
        res.routing.tokens = T;
        res.routing.slots = r.slots();
        res.routing.ids.assign(static_cast<size_t>(rows), -1);
        res.routing.weights.assign(static_cast<size_t>(rows), poison);
        std::string err;
        // The child's writes land in its copy-on-write image of the case, which the parent's CANARY
        // never sees: the input check runs here, over the tensors the plugin was handed.
        const uint64_t inputs_before = plugin_->wants_device ? 0 : case_fingerprint(c);
        if (plugin_->wants_device) {
          // CUDA is initialized here, in the child, never in the moefuzz process (kernels/device_plugin.h).
          err = run_device_plugin(*plugin_, profile, c, opts, res, y,
                                  static_cast<int64_t>(y_with_band.size() - y.size()));
        } else if (profile != nullptr) {
          PluginStages stages(*plugin_, view);
          err = run_composed(*profile, c, opts, stages, res, y);
        } else {
          err = run_whole_layer(*plugin_, view, res, y);
        }
        if (!err.empty()) return err;
        if (!plugin_->wants_device && case_fingerprint(c) != inputs_before)
          throw KernelFault(FaultKind::kBadResult, what + ": bad-result: modified its input tensors");
        serialize(w, res, y_with_band);
        return std::string();
      });
  std::vector<float> kept_output = std::move(out.output);  // keeps its storage (it may be y)
  out = LayerResult{};
  out.output = std::move(kept_output);
  deserialize(bytes, sizes, r, what, out, y_with_band);
}

std::chrono::milliseconds kernel_timeout_from_env(std::chrono::milliseconds fallback) {
  const char* env = std::getenv("MOEFUZZ_PLUGIN_TIMEOUT_S");
  if (env == nullptr || *env == '\0') return fallback;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  // Bounds: 1 ms is the resolution of the timeout; beyond a day the value is a typo.
  if (end == env || *end != '\0' || !(s >= 0.001) || s > 86400) {
    throw InputError(std::string("MOEFUZZ_PLUGIN_TIMEOUT_S='") + env +
                     "': expected seconds in [0.001, 86400]");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

bool looks_like_plugin_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0);
}

std::unique_ptr<Kernel> make_plugin_kernel(const std::string& path, PluginKernelOptions options) {
  return std::make_unique<PluginKernel>(load_plugin(path, options.timeout), options);
}

std::unique_ptr<Kernel> make_plugin_kernel(const std::string& path) {
  PluginKernelOptions options;
  options.timeout = kernel_timeout_from_env(options.timeout);
  return make_plugin_kernel(path, options);
}

}  // namespace moefuzz

#include "drivers/shrinker.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "core/repro_command.h"
#include "drivers/check_engine.h"
#include "drivers/finding_file.h"
#include "kernels/isolated_run.h"
#include "kernels/kernel_name.h"

namespace moefuzz {
namespace {

using Clock = std::chrono::steady_clock;

// Simplicity of a real, relative to the field's default: every accepted real step strictly lowers
// it, which (with the finite number of ranks) is what guarantees the value passes terminate.
int real_rank(double x, double default_value) {
  if (x == default_value || (std::isnan(x) && std::isnan(default_value))) return 0;
  if (x == 0) return 1;
  if (std::fabs(x) == 1) return 2;
  if (!std::isfinite(x)) return 6;
  int exp = 0;
  if (std::frexp(std::fabs(x), &exp) == 0.5) return 3;  // a power of two
  if (x == std::round(x)) return 4;
  return 5;
}

// Simpler reals to try for x, simplest first.
std::vector<double> simpler_reals(double x, double default_value) {
  std::vector<double> c = {default_value, 0.0, 1.0, -1.0, 2.0, 0.5};
  if (std::isfinite(x) && x != 0) {
    c.push_back(std::copysign(std::exp2(std::round(std::log2(std::fabs(x)))), x));
    c.push_back(std::round(x));
  }
  std::vector<double> out;
  const int rx = real_rank(x, default_value);
  for (double v : c) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](double o) { return o == v; });
    if (!seen && real_rank(v, default_value) < rx) out.push_back(v);
  }
  std::stable_sort(out.begin(), out.end(), [&](double a, double b) {
    return real_rank(a, default_value) < real_rank(b, default_value);
  });
  return out;
}

// Integers to try below x, simplest first: lo, then x - d for d = (x-lo)/2, (x-lo)/4, ..., 1.
std::vector<int64_t> smaller_ints(int64_t x, int64_t lo) {
  std::vector<int64_t> out;
  if (x <= lo) return out;
  out.push_back(lo);
  for (int64_t d = (x - lo) / 2; d >= 1; d /= 2)
    if (x - d != out.back()) out.push_back(x - d);
  if (out.back() != x - 1) out.push_back(x - 1);
  return out;
}

// Largest divisor of e that is <= cap (>= 1).
int64_t divisor_at_most(int64_t e, int64_t cap) {
  for (int64_t d = std::min(cap, e); d > 1; --d)
    if (e % d == 0) return d;
  return 1;
}

// Makes the grouping and top-k consistent with a (smaller) expert count.
void fit_groups(CaseRecipe& r) {
  Shape& s = r.shape;
  if (s.experts % s.n_group != 0 || s.n_group > s.experts) s.n_group = divisor_at_most(s.experts, s.n_group);
  s.topk_group = std::min(s.topk_group, s.n_group);
  if (r.routing.mode != RoutingMode::kHash) s.top_k = std::min(s.top_k, s.experts);
  if (r.routing.mode == RoutingMode::kSigmoidGrouped)
    s.top_k = std::min(s.top_k, s.topk_group * (s.experts / s.n_group));
  s.top_k = std::max<int64_t>(s.top_k, 1);
}

// The size dimensions a proxy can keep at the input's value (bit flags).
constexpr unsigned kKeepTokens = 1, kKeepExperts = 2, kKeepTopK = 4, kKeepHidden = 8, kKeepInter = 16;
constexpr unsigned kSizeDims[] = {kKeepHidden, kKeepInter, kKeepExperts, kKeepTokens, kKeepTopK};

const char* dim_name(unsigned d) {
  switch (d) {
    case kKeepTokens:
      return "tokens";
    case kKeepExperts:
      return "experts";
    case kKeepTopK:
      return "top_k";
    case kKeepHidden:
      return "hidden";
    default:
      return "inter";
  }
}
int64_t dim_value(const CaseRecipe& r, unsigned d) {
  switch (d) {
    case kKeepTokens:
      return r.shape.tokens;
    case kKeepExperts:
      return r.shape.experts;
    case kKeepTopK:
      return r.shape.top_k;
    case kKeepHidden:
      return r.shape.hidden;
    default:
      return r.shape.inter;
  }
}
void set_dim(CaseRecipe& r, unsigned d, int64_t v) {
  switch (d) {
    case kKeepTokens:
      r.shape.tokens = v;
      break;
    case kKeepExperts:
      r.shape.experts = v;
      break;
    case kKeepTopK:
      r.shape.top_k = v;
      break;
    case kKeepHidden:
      r.shape.hidden = v;
      break;
    default:
      r.shape.inter = v;
      break;
  }
}
int64_t dim_floor(unsigned d) { return d == kKeepHidden || d == kKeepInter ? 16 : 1; }

class Shrinker {
 public:
  Shrinker(const Kernel& k, const ShrinkOptions& o, ShrinkResult& res)
      : k_(k), o_(o), res_(res), start_(Clock::now()) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  bool out_of_time() const { return o_.seconds > 0 && elapsed() >= o_.seconds; }

  // The invariants candidates are checked with, once the signature is known.
  void set_signature(const std::string& sig) {
    sig_ = sig;
    const std::string code = sig.substr(0, sig.find('/'));
    bool is_fault = false;  // CRASH/layer, HANG/supports, ...: shows under any invariant
    for (int k = 0; k <= static_cast<int>(FaultKind::kDeviceError); ++k)
      is_fault = is_fault || fault_report_class(static_cast<FaultKind>(k)) == code;
    if (o_.all_invariants || is_fault) {
      invs_ = select_invariants("all");
    } else {
      invs_ = {&invariant_by_code(sig.substr(0, sig.find('/')))};
    }
  }

  // Checks a candidate: valid, supported, small enough, and failing with the signature. With no
  // signature yet, any failure counts and fixes the signature.
  bool reproduces(const CaseRecipe& c, Verdict* verdict) {
    if (!validate(c).empty()) return false;
    std::optional<Verdict> supports_fault;
    if (!supports_or_fault(k_, c, supports_fault).empty()) {
      // A fault in supports() is a reproduction when it is the signature being kept.
      if (!supports_fault || !tried_.insert(to_text(c)).second) return false;
      if (sig_.empty() || supports_fault->signature() == sig_) {
        if (verdict) *verdict = *supports_fault;
        return true;
      }
      return false;
    }
    if (estimate_case_bytes(c) > o_.max_check_bytes) return false;
    if (!tried_.insert(to_text(c)).second) return false;
    std::optional<Case> materialized;
    try {
      materialized.emplace(materialize(c, o_.max_check_bytes));
    } catch (const std::exception&) {
      return false;  // a candidate the materializer rejects is simply not a reproduction
    }
    ++res_.candidates;
    CheckOptions co{.invariants = sig_.empty() ? select_invariants("all") : invs_,
                    .run = o_.run,
                    .stop_at_first_failure = true};
    const CaseReport rep = check_case(k_, *materialized, co);
    for (const Verdict& v : rep.verdicts) {
      if (!v.failed()) continue;
      // All-invariant mode keeps the FIRST failure's signature; signature-only mode checks one.
      if (sig_.empty() || v.signature() == sig_) {
        if (verdict) *verdict = v;
        return true;
      }
      if (o_.all_invariants) return false;
    }
    return false;
  }

  // Accepts c as the new best when it still fails (trying other seeds when asked).
  bool try_accept(CaseRecipe c, const char* what) {
    c = fit_edits(std::move(c));
    if (c == res_.shrunk) return false;
    std::vector<uint64_t> seeds = {c.seed};
    if (seed_mode_)
      for (int i = 1; i <= o_.seed_retries; ++i) seeds.push_back(c.seed + static_cast<uint64_t>(i));
    for (uint64_t seed : seeds) {
      if (out_of_time()) return false;
      c.seed = seed;
      Verdict v;
      if (!reproduces(c, &v)) continue;
      res_.shrunk = c;
      res_.verdict = v;
      ++res_.accepted;
      if (o_.log) o_.log(fmt::format("[{:6.2f}s] {}: {}", elapsed(), what, shape_summary(c)));
      return true;
    }
    return false;
  }

  // Tries smaller values of one integer field (via `set`), simplest first; true on progress.
  template <class Set>
  bool shrink_int(int64_t x, int64_t lo, const char* what, Set set) {
    for (int64_t v : smaller_ints(x, lo)) {
      CaseRecipe c = res_.shrunk;
      set(c, v);
      if (try_accept(std::move(c), what)) return true;
    }
    return false;
  }

  bool pass_sizes() {
    const Shape s = res_.shrunk.shape;
    bool p = false;
    p |= shrink_int(s.experts, 1, "experts", [](CaseRecipe& c, int64_t v) {
      c.shape.experts = v;
      fit_groups(c);
    });
    p |= shrink_int(s.tokens, 1, "tokens", [](CaseRecipe& c, int64_t v) { c.shape.tokens = v; });
    p |= shrink_int(res_.shrunk.shape.inter / 16, 1, "inter",
                    [](CaseRecipe& c, int64_t v) { c.shape.inter = 16 * v; });
    p |= shrink_int(res_.shrunk.shape.hidden / 16, 1, "hidden",
                    [](CaseRecipe& c, int64_t v) { c.shape.hidden = 16 * v; });
    p |= shrink_int(res_.shrunk.shape.top_k, 1, "top_k", [](CaseRecipe& c, int64_t v) { c.shape.top_k = v; });
    return p;
  }

  bool pass_structure() {
    bool p = false;
    const CaseRecipe& r = res_.shrunk;
    // Groups: only divisors of E, smallest first.
    for (int64_t g = 1; g < res_.shrunk.shape.n_group; ++g) {
      if (res_.shrunk.shape.experts % g != 0) continue;
      CaseRecipe c = res_.shrunk;
      c.shape.n_group = g;
      fit_groups(c);
      if (try_accept(std::move(c), "n_group")) {
        p = true;
        break;
      }
    }
    p |= shrink_int(r.shape.topk_group, 1, "topk_group", [](CaseRecipe& c, int64_t v) {
      c.shape.topk_group = v;
      fit_groups(c);
    });
    p |= shrink_int(res_.shrunk.shape.shared_experts, 0, "shared_experts", [](CaseRecipe& c, int64_t v) {
      c.shape.shared_experts = v;
      if (v == 0) c.routing.shared_fusion = SharedFusion::kSeparate;
    });
    return p;
  }

  bool pass_edits() {
    bool p = false;
    if (res_.shrunk.edits.size() > 1) {
      CaseRecipe c = res_.shrunk;
      c.edits.clear();
      if (try_accept(std::move(c), "all edits dropped")) return true;
    }
    for (size_t i = res_.shrunk.edits.size(); i-- > 0;) {
      if (i >= res_.shrunk.edits.size()) continue;
      CaseRecipe c = res_.shrunk;
      c.edits.erase(c.edits.begin() + static_cast<std::ptrdiff_t>(i));
      p |= try_accept(std::move(c), "edit dropped");
    }
    return p;
  }

  template <class Get>
  bool shrink_real(double default_value, const char* what, Get get) {
    for (double v : simpler_reals(get(res_.shrunk), default_value)) {
      CaseRecipe c = res_.shrunk;
      get(c) = v;
      if (try_accept(std::move(c), what)) return true;
    }
    return false;
  }

  bool pass_values() {
    const CaseRecipe d;
    bool p = false;
    p |= shrink_real(d.routing.routed_scaling_factor, "routed_scaling_factor",
                     [](CaseRecipe& c) -> double& { return c.routing.routed_scaling_factor; });
    p |= shrink_real(d.quant.gate_up_scale_ratio, "gate_up_scale_ratio",
                     [](CaseRecipe& c) -> double& { return c.quant.gate_up_scale_ratio; });
    p |= shrink_real(d.swiglu.limit, "swiglu.limit", [](CaseRecipe& c) -> double& { return c.swiglu.limit; });
    p |= shrink_real(d.swiglu.alpha, "swiglu.alpha", [](CaseRecipe& c) -> double& { return c.swiglu.alpha; });
    p |= shrink_real(d.swiglu.beta, "swiglu.beta", [](CaseRecipe& c) -> double& { return c.swiglu.beta; });
    for (size_t i = 0; i < res_.shrunk.edits.size(); ++i) {
      const auto t = edit_target(res_.shrunk, res_.shrunk.edits[i].tensor);
      if (!t || t->kind != EditValueKind::kReal) continue;
      p |= shrink_real(0.0, "edit value", [i](CaseRecipe& c) -> double& { return c.edits[i].value; });
    }
    return p;
  }

  // Each option back to CaseRecipe{}'s value, each value profile back to its first enumerator.
  bool pass_tame() {
    CaseRecipe d;
    bool p = false;
    auto to_default = [&](auto field, const char* what) {
      CaseRecipe c = res_.shrunk;
      if (field(c) == field(d)) return;
      field(c) = field(d);
      p |= try_accept(std::move(c), what);
    };
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.logits; }, "values.logits");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.bias; }, "values.bias");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.table; }, "values.table");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.weights; }, "values.weights");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.hidden; }, "values.hidden");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.act_scale; }, "values.act_scale");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.values.load; }, "values.load");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.shared_fusion; }, "shared_fusion");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.scale_placement; }, "scale_placement");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.renormalize; }, "renormalize");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.correction_bias; }, "correction_bias");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.hash_score; }, "hash_score");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.routing.vocab; }, "vocab");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.expert_bias; }, "expert_bias");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.quant.act_scales; }, "act_scales");
    to_default(
        [](CaseRecipe & c) -> auto& { return c.quant.activations; }, "activations");
    return p;
  }

  // Greedy rounds to a fixpoint; a stuck round is retried once with seed variations.
  void run() {
    for (int round = 0; !out_of_time(); ++round) {
      bool p = pass_sizes();
      p |= pass_structure();
      p |= pass_edits();
      p |= pass_values();
      p |= pass_tame();
      if (out_of_time()) return;
      if (p) continue;
      if (seed_mode_ || o_.seed_retries <= 0) {
        res_.fixpoint = true;
        return;
      }
      seed_mode_ = true;  // only the size passes: seeds change values, never shrink by themselves
      const bool q = pass_sizes();
      seed_mode_ = false;
      if (!q && !out_of_time()) {
        res_.fixpoint = true;
        return;
      }
    }
  }

  // A recipe too large to check: the fewest experts its grouping allows, then H, I (and T) halved
  // until it fits the check budget.
  CaseRecipe proxy_of(const CaseRecipe& in) const {
    CaseRecipe p = in;
    for (int64_t e = 1; e < in.shape.experts; ++e) {
      CaseRecipe c = in;
      c.shape.experts = e;
      if (e % c.shape.n_group != 0) continue;
      c = fit_edits(std::move(c));
      if (validate(c).empty() && k_.supports(c).empty()) {
        p = c;
        break;
      }
    }
    for (int i = 0; i < 64 && estimate_case_bytes(p) > o_.max_check_bytes; ++i) {
      CaseRecipe c = p;
      if (c.shape.hidden >= 32 && c.shape.hidden % 32 == 0) c.shape.hidden /= 2;
      if (c.shape.inter >= 32 && c.shape.inter % 32 == 0) c.shape.inter /= 2;
      if (c.shape == p.shape && c.shape.tokens > 1) c.shape.tokens = (c.shape.tokens + 1) / 2;
      if (c.shape == p.shape) break;
      p = fit_edits(std::move(c));
    }
    return p;
  }

  // `in` with every size dimension outside `keep` at its floor (where the result stays valid and
  // supported): the proxy that keeps a shape-specific trigger (hidden == 7168, experts > 256) of the
  // input while everything else becomes small enough to check.
  CaseRecipe minimal_except(const CaseRecipe& in, unsigned keep) const {
    CaseRecipe p = in;
    auto try_set = [&](auto set) {
      CaseRecipe c = p;
      set(c);
      c = fit_edits(std::move(c));
      if (validate(c).empty() && k_.supports(c).empty()) p = std::move(c);
    };
    if (!(keep & kKeepTokens)) try_set([](CaseRecipe& c) { c.shape.tokens = 1; });
    if (!(keep & kKeepTopK)) try_set([](CaseRecipe& c) { c.shape.top_k = 1; });
    if (!(keep & kKeepExperts)) {
      for (int64_t e = (keep & kKeepTopK) ? p.shape.top_k : 1; e < p.shape.experts; ++e) {
        CaseRecipe c = p;
        c.shape.experts = e;
        fit_groups(c);
        c = fit_edits(std::move(c));
        if (c.shape.top_k == p.shape.top_k && validate(c).empty() && k_.supports(c).empty()) {
          p = std::move(c);
          break;
        }
      }
    }
    if (!(keep & kKeepHidden)) try_set([](CaseRecipe& c) { c.shape.hidden = 16; });
    if (!(keep & kKeepInter)) try_set([](CaseRecipe& c) { c.shape.inter = 16; });
    return p;
  }

  // The starts tried for an input too large to check, in order: the structural proxy, then proxies
  // keeping one, then two of the input's size dimensions (each named, for the report).
  std::vector<std::pair<CaseRecipe, std::string>> proxies_of(const CaseRecipe& in) const {
    std::vector<std::pair<CaseRecipe, std::string>> out = {{proxy_of(in), ""}};
    std::vector<unsigned> keeps;
    for (unsigned a : kSizeDims) keeps.push_back(a);
    for (size_t i = 0; i < std::size(kSizeDims); ++i)
      for (size_t j = i + 1; j < std::size(kSizeDims); ++j) keeps.push_back(kSizeDims[i] | kSizeDims[j]);
    for (unsigned keep : keeps) {
      CaseRecipe c = minimal_except(in, keep);
      std::string kept;
      for (unsigned d : kSizeDims)
        if ((keep & d) && dim_value(c, d) == dim_value(in, d))
          kept += fmt::format("{}{} {}", kept.empty() ? "" : ", ", dim_name(d), dim_value(in, d));
      if (kept.empty()) continue;  // the dimension could not be kept at its input value
      const bool seen = std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.first == c; });
      if (!seen) out.emplace_back(std::move(c), std::move(kept));
    }
    return out;
  }

  // Why each size dimension of the result stays above its floor: one line per dimension.
  std::vector<std::string> kept_reasons() const {
    std::vector<std::string> out;
    const CaseRecipe& r = res_.shrunk;
    for (unsigned d : kSizeDims) {
      const int64_t v = dim_value(r, d), floor = dim_floor(d);
      if (v <= floor) continue;
      CaseRecipe c = r;
      set_dim(c, d, floor);
      if (d == kKeepExperts) fit_groups(c);
      c = fit_edits(std::move(c));
      std::string why;
      if (const std::string bad = validate(c); !bad.empty()) {
        why = "smaller is not a valid recipe here (" + bad + ")";
      } else if (const std::string no = k_.supports(c); !no.empty()) {
        why = "the kernel does not support smaller (" + no + ")";
      } else {
        std::string tried;
        const int64_t step = (d == kKeepHidden || d == kKeepInter) ? 16 : 1;
        for (int64_t x : smaller_ints(v / step, floor / step))
          tried += fmt::format("{}{}", tried.empty() ? "" : " ", x * step);
        why = fmt::format("the failure needs it: {} did not reproduce {} with {} = {}", dim_name(d), sig_,
                          dim_name(d), tried);
      }
      out.push_back(fmt::format("kept {} {}: {}", dim_name(d), v, why));
    }
    return out;
  }

  bool seed_mode_ = false;

 private:
  const Kernel& k_;
  const ShrinkOptions& o_;
  ShrinkResult& res_;
  Clock::time_point start_;
  std::string sig_;
  std::vector<const Invariant*> invs_;
  std::set<std::string> tried_;
};

}  // namespace

CaseRecipe fit_edits(CaseRecipe r) {
  std::vector<Edit> kept;
  for (Edit e : r.edits) {
    const auto t = edit_target(r, e.tensor);
    if (!t || t->shape.size() != e.index.size()) continue;
    bool empty = false;
    for (size_t d = 0; d < t->shape.size(); ++d) {
      if (t->shape[d] <= 0)
        empty = true;
      else
        e.index[d] = std::clamp<int64_t>(e.index[d], 0, t->shape[d] - 1);
    }
    if (empty) continue;
    if (t->kind == EditValueKind::kExpertId)
      e.value = std::clamp(e.value, 0.0, static_cast<double>(r.shape.experts - 1));
    if (t->kind == EditValueKind::kTokenId)
      e.value = std::clamp(e.value, 0.0, static_cast<double>(r.hash_vocab() - 1));
    kept.push_back(std::move(e));
  }
  r.edits = std::move(kept);
  return r;
}

std::string shape_summary(const CaseRecipe& r) {
  const Shape& s = r.shape;
  return fmt::format(
      "tokens {}, experts {}{}, top_k {}, n_group {}, topk_group {}, hidden {}, inter {}, edits {}", s.tokens,
      s.experts, s.shared_experts ? fmt::format(" (+{} shared)", s.shared_experts) : "", s.top_k, s.n_group,
      s.topk_group, s.hidden, s.inter, r.edits.size());
}

ShrinkResult shrink_recipe(const Kernel& kernel, const CaseRecipe& input, const ShrinkOptions& options) {
  if (const std::string why = validate(input); !why.empty())
    throw InputError("shrink: invalid recipe: " + why);
  std::optional<Verdict> supports_fault;
  if (const std::string why = supports_or_fault(kernel, input, supports_fault);
      !why.empty() && !supports_fault)
    throw InputError(fmt::format("shrink: kernel {} does not support this recipe: {}", kernel.name(), why));
  ShrinkResult res;
  res.original = input;
  res.shrunk = input;
  Shrinker s(kernel, options, res);
  if (!options.expected_signature.empty()) {
    const auto slash = options.expected_signature.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == options.expected_signature.size())
      throw InputError(
          fmt::format("shrink: signature '{}' is not INVARIANT/STAGE", options.expected_signature));
    s.set_signature(options.expected_signature);  // throws InputError for an unknown invariant
  }
  // The start: the input itself; when it is too large to check, the first of its proxies that fails
  // (the structural proxy, then proxies keeping one or two input dimensions: a shape-specific trigger
  // such as hidden == 7168 survives in one of them while the others shrink).
  CaseRecipe start = input;
  Verdict v;
  res.input_checked = estimate_case_bytes(input) <= options.max_check_bytes;
  if (res.input_checked) {
    if (!s.reproduces(start, &v)) {
      res.seconds = s.elapsed();
      return res;
    }
  } else {
    const auto proxies = s.proxies_of(input);
    int tried = 0;
    bool found = false;
    for (const auto& [proxy, kept] : proxies) {
      if (estimate_case_bytes(proxy) > options.max_check_bytes) continue;
      ++tried;
      if (options.log)
        options.log(fmt::format("input too large to check; trying its proxy{}: {}",
                                kept.empty() ? "" : " keeping " + kept, shape_summary(proxy)));
      if (s.reproduces(proxy, &v)) {
        start = proxy;
        res.proxy_kept = kept;
        found = true;
        break;
      }
    }
    if (!found) {
      res.notes.push_back(fmt::format(
          "none of the {} proxies within --max-check-bytes ({} bytes) reproduces{}: the structural proxy "
          "and those keeping one or two input dimensions (hidden, inter, experts, tokens, top_k) at their "
          "input value; the failure needs more of the input's shape than fits: raise --max-check-bytes",
          tried, options.max_check_bytes,
          options.expected_signature.empty() ? "" : " " + options.expected_signature));
      res.seconds = s.elapsed();
      return res;
    }
  }
  res.input_failed = true;
  res.signature = v.signature();
  res.verdict = v;
  res.shrunk = start;
  s.set_signature(res.signature);
  if (options.log) options.log(fmt::format("signature {}: {}", res.signature, one_line(v.message)));
  s.run();
  res.notes = s.kept_reasons();
  res.seconds = s.elapsed();
  return res;
}

std::string format_regression(const ShrinkResult& s, const std::string& kernel_as_given,
                              const std::string& out_path) {
  FindingHeader h{.kills = s.signature,
                  .kernel = stored_kernel_name(kernel_as_given)};  // plugin paths absolute
  h.message = s.verdict.message;
  h.repro = repro_replay_command(out_path, h.kernel);
  h.notes.push_back(fmt::format(
      "before: {}{}", shape_summary(s.original),
      s.input_checked        ? ""
      : s.proxy_kept.empty() ? " (too large to check: shrunk from its structural proxy)"
                             : " (too large to check: shrunk from its proxy keeping " + s.proxy_kept + ")"));
  h.notes.push_back(fmt::format("after: {}", shape_summary(s.shrunk)));
  h.notes.push_back(fmt::format("shrunk in {:.2f}s: {} candidates checked, {} accepted, {}", s.seconds,
                                s.candidates, s.accepted, s.fixpoint ? "fixpoint" : "time budget reached"));
  for (const std::string& n : s.notes) h.notes.push_back(n);
  return finding_text(to_text(s.shrunk), h);
}

}  // namespace moefuzz

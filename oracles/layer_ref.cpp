#include "oracles/layer_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "core/elementwise_compare.h"
#include "core/errors.h"
#include "oracles/row_memo.h"
#include "oracles/stages/activation.h"
#include "oracles/stages/combine.h"
#include "oracles/stages/gemm1.h"
#include "oracles/stages/gemm2.h"
#include "oracles/stages/quantize.h"
#include "oracles/stages/route.h"

namespace moefuzz {

const StageExpectation* LayerReference::stage(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return &s;
  return nullptr;
}

namespace {

// Moves one expanded row's intervals between an evaluation (its GEMM2 outputs `y` and, when kept,
// its gemm1/activation/gemm2 stage rows at the row's kernel slot) and a memo row
// (oracles/row_memo.h: [y lo H][y hi H] then [gemm1 2I x2][activation I x2][gemm2 H x2]).
struct RowCopier {
  int64_t H, I;
  stages::ExpertOutputs& y;
  StageExpectation *g1, *act, *g2;

  bool has_intermediates(const stages::ExpandedRow& row) const { return g1 != nullptr && row.slot >= 0; }

  OracleRowMemo::Row take(int64_t r, const stages::ExpandedRow& row) const {
    OracleRowMemo::Row out;
    out.intermediates = has_intermediates(row);
    std::vector<double>& v = out.values;
    v.reserve(static_cast<size_t>(2 * H + (out.intermediates ? 2 * (3 * I + H) : 0)));
    const auto append = [&](const std::vector<double>& from, int64_t at, int64_t n) {
      v.insert(v.end(), from.begin() + at * n, from.begin() + (at + 1) * n);
    };
    append(y.lo, r, H);
    append(y.hi, r, H);
    if (out.intermediates)
      for (const StageExpectation* st : {g1, act, g2}) {
        append(st->expected, row.slot, st->cols);
        append(st->bound, row.slot, st->cols);
      }
    return out;
  }

  void put(const OracleRowMemo::Row& from, int64_t r, const stages::ExpandedRow& row) const {
    const double* v = from.values.data();
    const auto copy = [&](std::vector<double>& to, int64_t at, int64_t n) {
      std::copy_n(v, n, to.begin() + at * n);
      v += n;
    };
    copy(y.lo, r, H);
    copy(y.hi, r, H);
    if (has_intermediates(row))
      for (StageExpectation* st : {g1, act, g2}) {
        copy(st->expected, row.slot, st->cols);
        copy(st->bound, row.slot, st->cols);
      }
  }
};

}  // namespace

// The stages of SPEC.md §3.7 in order, one expert at a time (oracles/stages/): each takes the
// previous stage's intervals, conditioned on the kernel's own decisions where it exposes them. The
// first inadmissible kernel decision ends the evaluation.
LayerReference reference_layer(const Case& c, const Profile& p, const RoutingDecision& routing,
                               const LayerResult* kernel, LayerReferenceOptions opts) {
  using namespace stages;
  const Shape& sh = c.recipe.shape;
  const int64_t T = sh.tokens, H = sh.hidden, I = sh.inter;
  const int64_t slots = routing.slots;
  if (routing.tokens != T || static_cast<int64_t>(routing.ids.size()) != T * slots ||
      static_cast<int64_t>(routing.weights.size()) != T * slots)
    throw InputError("routing decision shape does not match the case");
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  const bool fp8 = c.recipe.quant.activations == ActivationFormat::kFp8Group;
  if (kernel != nullptr && !w4a16 && !fp8) {
    check_exposed_shape(kernel->fc1_input, T * slots, H, "fc1_input");
    check_exposed_shape(kernel->fc2_input, T * slots, I, "fc2_input");
  }
  // FP8 W8A8: the profile's activation quantizer (with the recipe's UE8M0 option) and the exposure.
  const Fp8ActQuantModel fp8_model{.variant = p.fp8_act_quant, .ue8m0 = c.recipe.quant.fp8_ue8m0};
  const Fp8Quantization fp8_fc1{fp8_model, kernel != nullptr ? &kernel->fc1_fp8 : nullptr};
  const Fp8Quantization fp8_fc2{fp8_model, kernel != nullptr ? &kernel->fc2_fp8 : nullptr};
  LayerReference ref;
  ref.admissibility = Verdict::pass("ORACLE", "admissibility");
  if (kernel != nullptr && fp8) {
    for (Verdict v : {check_exposed_fp8_shape(kernel->fc1_fp8, T * slots, H, "fc1_quant"),
                      check_exposed_fp8_shape(kernel->fc2_fp8, T * slots, I, "fc2_quant")})
      if (v.failed()) {
        ref.admissibility = v;
        return ref;
      }
  }
  const std::vector<ExpandedRow> rows = expand_rows(c, routing, ref.admissibility);
  if (!ref.admissibility.passed()) return ref;
  const int64_t kernel_rows = T * slots, R = static_cast<int64_t>(rows.size());

  std::vector<StageExpectation> inter;
  StageExpectation *g1 = nullptr, *act = nullptr, *g2 = nullptr;
  if (opts.keep_intermediates) {
    inter.push_back(make_stage("gemm1", kernel_rows, 2 * I));
    inter.push_back(make_stage("activation", kernel_rows, I));
    inter.push_back(make_stage("gemm2", kernel_rows, H));
    g1 = &inter[0];
    act = &inter[1];
    g2 = &inter[2];
  }
  // Rows are allocated once one is computed: an evaluation whose rows all come from the memo borrows
  // them (below) and allocates nothing.
  ExpertOutputs y{.cols = H};
  const auto own_rows = [&] {
    if (!y.lo.empty() || R == 0) return;
    y.lo.resize(static_cast<size_t>(R * H));
    y.hi.resize(static_cast<size_t>(R * H));
  };
  std::vector<std::vector<int64_t>> by_expert(c.experts.size());
  for (int64_t r = 0; r < R; ++r)
    by_expert[static_cast<size_t>(rows[static_cast<size_t>(r)].expert)].push_back(r);
  Fc1Memo fc1_memo(c);
  const std::optional<QuantizedRows>* fc1_codes = kernel != nullptr ? &kernel->fc1_input : nullptr;
  const std::optional<QuantizedRows>* fc2_codes = kernel != nullptr ? &kernel->fc2_input : nullptr;

  OracleRowMemo* const memo = opts.memo != nullptr && &opts.memo->profile() == &p ? opts.memo : nullptr;
  std::optional<OracleRowKeys> keys;
  if (memo != nullptr) keys.emplace(c, p, kernel);

  // The FC1 quantization and GEMM1 of one expert's rows, each row's GEMM1 intervals (and gemm1 stage
  // row) taken from the memo where an earlier evaluation computed them (PARAM's SwiGLU limit changes
  // only what follows): those rows were admitted then.
  struct Gemm1Result {
    Verdict admissibility = Verdict::pass("ORACLE", "admissibility");
    Gemm1Rows rows;
  };
  const auto gemm1_rows = [&](size_t e, std::span<const int64_t> members, float sq1, double sda1) {
    Gemm1Result out;
    const ExpertWeights& W = c.experts[e];
    const int64_t n = static_cast<int64_t>(members.size());
    std::vector<int64_t> todo_at;  // positions in members
    std::vector<OracleRowMemo::Key> todo_keys;
    if (memo == nullptr) {
      for (int64_t j = 0; j < n; ++j) todo_at.push_back(j);
    } else {
      out.rows.gate.resize(static_cast<size_t>(n * I));
      out.rows.up.resize(static_cast<size_t>(n * I));
      for (int64_t j = 0; j < n; ++j) {
        const ExpandedRow& row = rows[static_cast<size_t>(members[static_cast<size_t>(j)])];
        const OracleRowMemo::Key k = keys->gemm1_key(row.token, row.slot, row.expert);
        const bool stage_row = g1 != nullptr && row.slot >= 0;
        if (const OracleRowMemo::Row* hit = memo->find_gemm1(k, stage_row)) {
          const double* v = hit->values.data();
          std::memcpy(static_cast<void*>(out.rows.gate.data() + j * I), v,
                      static_cast<size_t>(I) * sizeof(Interval));
          std::memcpy(static_cast<void*>(out.rows.up.data() + j * I), v + 2 * I,
                      static_cast<size_t>(I) * sizeof(Interval));
          if (stage_row) {
            std::copy_n(v + 4 * I, 2 * I, g1->expected.begin() + row.slot * 2 * I);
            std::copy_n(v + 6 * I, 2 * I, g1->bound.begin() + row.slot * 2 * I);
          }
        } else {
          todo_at.push_back(j);
          todo_keys.push_back(k);
        }
      }
      if (todo_at.empty()) return out;
    }
    std::vector<int64_t> todo_members(todo_at.size());
    for (size_t i = 0; i < todo_at.size(); ++i) todo_members[i] = members[static_cast<size_t>(todo_at[i])];
    const ExpertRows er{rows, todo_members};
    const Fc1Input fc1 = quantize_fc1(c, er, sq1, fc1_codes, fc1_memo, fp8_fc1);
    if (!fc1.admissibility.passed()) {
      out.admissibility = fc1.admissibility;
      return out;
    }
    Gemm1Rows computed = gemm1(c, p, er, W, fc1, sda1, g1);
    if (memo == nullptr) {
      out.rows = std::move(computed);
      return out;
    }
    for (size_t i = 0; i < todo_at.size(); ++i) {
      const int64_t j = todo_at[i];
      const ExpandedRow& row = rows[static_cast<size_t>(todo_members[i])];
      std::copy_n(computed.gate.begin() + static_cast<int64_t>(i) * I, I, out.rows.gate.begin() + j * I);
      std::copy_n(computed.up.begin() + static_cast<int64_t>(i) * I, I, out.rows.up.begin() + j * I);
      OracleRowMemo::Row kept;
      kept.intermediates = g1 != nullptr && row.slot >= 0;
      kept.values.resize(static_cast<size_t>(4 * I + (kept.intermediates ? 4 * I : 0)));
      std::memcpy(kept.values.data(), computed.gate.data() + static_cast<int64_t>(i) * I,
                  static_cast<size_t>(I) * sizeof(Interval));
      std::memcpy(kept.values.data() + 2 * I, computed.up.data() + static_cast<int64_t>(i) * I,
                  static_cast<size_t>(I) * sizeof(Interval));
      if (kept.intermediates) {
        std::copy_n(g1->expected.begin() + row.slot * 2 * I, 2 * I, kept.values.begin() + 4 * I);
        std::copy_n(g1->bound.begin() + row.slot * 2 * I, 2 * I, kept.values.begin() + 6 * I);
      }
      memo->insert_gemm1(todo_keys[i], std::move(kept));
    }
    return out;
  };

  // One expert's rows through the stages; the first inadmissible kernel decision is returned.
  const auto run_stages = [&](size_t e, std::span<const int64_t> members) -> Verdict {
    own_rows();
    const ExpertRows er{rows, members};
    const ExpertWeights& W = c.experts[e];
    const float sq1 = c.a1_scale_for(static_cast<int64_t>(e)), sq2 = c.a2_scale_for(static_cast<int64_t>(e));
    // W4A4: activations dequantize with 1/S_q; W4A16 and W8A8 activations carry no global scale.
    const double sda1 = w4a16 || fp8 ? 1.0 : 1.0 / static_cast<double>(sq1);
    const double sda2 = w4a16 || fp8 ? 1.0 : 1.0 / static_cast<double>(sq2);

    const Gemm1Result g = gemm1_rows(e, members, sq1, sda1);
    if (!g.admissibility.passed()) return g.admissibility;
    const ActivationRows h = activation(p, c.recipe.swiglu, er, g.rows, I, act);
    const Fc2Input fc2 =
        quantize_fc2(c, er, sq2, h, fc2_codes, kernel != nullptr ? &kernel->activation : nullptr, fp8_fc2);
    if (!fc2.admissibility.passed()) return fc2.admissibility;
    gemm2(c, p, er, W, fc2, h, sda2, g2, y);
    return Verdict::pass("ORACLE", "admissibility");
  };

  // Rows an earlier evaluation already computed come from the memo (oracles/row_memo.h); the stages
  // run on the others, which are then kept.
  // Without intermediates a memo row is borrowed, not copied: no row of this evaluation needs one, so
  // none misses a found key and re-inserts it, and the memo never drops a row (its storage stays put).
  const bool borrow = memo != nullptr && g1 == nullptr;
  if (borrow) {
    y.borrowed_lo.assign(static_cast<size_t>(R), nullptr);
    y.borrowed_hi.assign(static_cast<size_t>(R), nullptr);
  }
  RowCopier copier{H, I, y, g1, act, g2};
  std::vector<int64_t> todo;
  std::vector<OracleRowMemo::Key> todo_keys;
  for (size_t e = 0; e < c.experts.size(); ++e) {
    if (by_expert[e].empty()) continue;
    std::span<const int64_t> members = by_expert[e];
    if (memo != nullptr) {
      todo.clear();
      todo_keys.clear();
      for (int64_t r : by_expert[e]) {
        const ExpandedRow& row = rows[static_cast<size_t>(r)];
        const OracleRowMemo::Key k = keys->key(row.token, row.slot, row.expert);
        if (const OracleRowMemo::Row* hit = memo->find(k, copier.has_intermediates(row))) {
          if (borrow) {
            y.borrowed_lo[static_cast<size_t>(r)] = hit->values.data();
            y.borrowed_hi[static_cast<size_t>(r)] = hit->values.data() + H;
          } else {
            own_rows();
            copier.put(*hit, r, row);
          }
        } else {
          todo.push_back(r);
          todo_keys.push_back(k);
        }
      }
      members = todo;
      if (members.empty()) continue;
    }
    Verdict v = run_stages(e, members);
    // A failure among some of the rows: the one the whole expert reports (the fresh evaluation's).
    if (!v.passed() && members.size() != by_expert[e].size()) v = run_stages(e, by_expert[e]);
    if (!v.passed()) {
      ref.admissibility = v;
      return ref;
    }
    if (memo != nullptr)
      for (size_t i = 0; i < todo.size(); ++i)
        memo->insert(todo_keys[i], copier.take(todo[i], rows[static_cast<size_t>(todo[i])]));
  }

  StageExpectation out = combine(c, p, rows, y);
  for (auto& st : inter) ref.stages.push_back(std::move(st));
  ref.stages.push_back(std::move(out));
  return ref;
}

}  // namespace moefuzz

namespace moefuzz {

Verdict compare_stage(const StageExpectation& expected, std::span<const float> got,
                      const RoutingDecision* routing) {
  const size_t n = expected.expected.size();
  if (got.size() != n)
    return Verdict::fail("ORACLE", expected.stage,
                         "kernel " + expected.stage + " has " + std::to_string(got.size()) +
                             " elements, expected " + std::to_string(n));
  const bool per_row = expected.stage != "output" && expected.stage != "route";
  // Rows of "route" are tokens and its columns slots; rows of the per-row stages are the kernel's
  // expanded rows (token * slots + slot); rows of "output" are tokens.
  const auto locate = [&](int64_t row, int64_t col) {
    Location l{.element = col};
    if (expected.stage == "route") {
      l = {.token = row, .slot = col};
      if (routing != nullptr) l.expert = routing->ids[static_cast<size_t>(row * expected.cols + col)];
    } else if (per_row && routing != nullptr && routing->slots > 0) {
      l.token = row / routing->slots;
      l.slot = row % routing->slots;
      l.expert = routing->ids[static_cast<size_t>(row)];
    } else {
      l.token = row;
    }
    return l;
  };
  Verdict v = compare_elementwise("ORACLE", expected.stage, got, expected.expected, expected.bound,
                                  expected.rows, expected.cols, locate);
  if (v.failed()) v.message = expected.stage + " outside the derived bound: " + v.message;
  return v;
}

}  // namespace moefuzz

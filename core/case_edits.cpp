#include "core/case_edits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

std::string describe(const Edit& e, size_t number) {
  return fmt::format("edit #{} ({} [{}] = {})", number + 1, e.tensor, fmt::join(e.index, ", "), e.value);
}

// Row-major flat offset of e.index in a tensor of shape `dims`, or InputError.
size_t checked_offset(const Edit& e, size_t number, const std::vector<int64_t>& dims) {
  if (e.index.size() != dims.size())
    throw InputError(fmt::format("{}: tensor '{}' takes {} indices, got {}", describe(e, number), e.tensor,
                                 dims.size(), e.index.size()));
  size_t offset = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (e.index[d] < 0 || e.index[d] >= dims[d])
      throw InputError(
          fmt::format("{}: index {} is {}, outside [0, {})", describe(e, number), d, e.index[d], dims[d]));
    offset = offset * static_cast<size_t>(dims[d]) + static_cast<size_t>(e.index[d]);
  }
  return offset;
}

int64_t checked_integer(const Edit& e, size_t number, int64_t lo, int64_t hi, const char* what) {
  const double v = e.value;
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi) && v == std::floor(v)))
    throw InputError(fmt::format("{}: {} must be an integer in [{}, {}]", describe(e, number), what, lo, hi));
  return static_cast<int64_t>(v);
}

int64_t size_of(size_t n) { return static_cast<int64_t>(n); }

// "gate.code" -> (matrix of expert, field "code").
Nvfp4Matrix& matrix_of(ExpertWeights& w, std::string_view name) {
  if (name == "gate") return w.gate;
  if (name == "up") return w.up;
  return w.down;
}

}  // namespace

void apply_edit(Case& c, const Edit& e, size_t number) {
  const Shape& s = c.recipe.shape;
  const std::string& t = e.tensor;
  if (t == "hidden") {
    c.hidden[checked_offset(e, number,
                            {s.tokens, size_of(c.hidden.size()) / std::max<int64_t>(1, s.tokens)})] =
        bf16_from_float(static_cast<float>(e.value));
  } else if (t == "logits") {
    c.logits[checked_offset(e, number,
                            {s.tokens, size_of(c.logits.size()) / std::max<int64_t>(1, s.tokens)})] =
        static_cast<float>(e.value);
  } else if (t == "bias") {
    c.bias[checked_offset(e, number, {size_of(c.bias.size())})] = static_cast<float>(e.value);
  } else if (t == "token_ids") {
    const size_t at = checked_offset(e, number, {size_of(c.token_ids.size())});
    const int64_t vocab = s.top_k > 0 ? size_of(c.hash_table.size()) / s.top_k : 0;
    c.token_ids[at] =
        static_cast<int32_t>(checked_integer(e, number, 0, vocab - 1, "a token id (hash table row)"));
  } else if (t == "hash_table") {
    const int64_t k = s.top_k;
    const size_t at = checked_offset(e, number, {k > 0 ? size_of(c.hash_table.size()) / k : 0, k});
    c.hash_table[at] = static_cast<int32_t>(checked_integer(e, number, 0, s.experts - 1, "an expert id"));
  } else if (t == "a1_scale" || t == "a2_scale") {
    std::vector<float>& v = t == "a1_scale" ? c.a1_scale : c.a2_scale;
    v[checked_offset(e, number, {size_of(v.size())})] = static_cast<float>(e.value);
  } else if (const size_t dot = t.find('.');
             dot != std::string::npos && (t.compare(0, dot, "gate") == 0 || t.compare(0, dot, "up") == 0 ||
                                          t.compare(0, dot, "down") == 0)) {
    const std::string_view matrix = std::string_view(t).substr(0, dot),
                           field = std::string_view(t).substr(dot + 1);
    const int64_t experts = size_of(c.experts.size());
    if (field == "w") {
      Bf16ExpertWeights* first = experts > 0 ? &c.experts[0].bf16 : nullptr;
      const Bf16Matrix* m0 = first == nullptr   ? nullptr
                             : matrix == "gate" ? &first->gate
                             : matrix == "up"   ? &first->up
                                                : &first->down;
      checked_offset(e, number,
                     {m0 != nullptr && !m0->empty() ? experts : 0, m0 ? m0->rows : 0, m0 ? m0->cols : 0});
      Bf16ExpertWeights& w = c.experts[static_cast<size_t>(e.index[0])].bf16;
      Bf16Matrix& m = matrix == "gate" ? w.gate : matrix == "up" ? w.up : w.down;
      m.at(e.index[1], e.index[2]) = bf16_from_float(static_cast<float>(e.value));
      return;
    }
    if (field == "mx_code" || field == "mx_scale") {
      Mxfp4ExpertWeights* first = experts > 0 ? &c.experts[0].mx : nullptr;
      const Mxfp4Quantized* m0 = first == nullptr   ? nullptr
                                 : matrix == "gate" ? &first->gate
                                 : matrix == "up"   ? &first->up
                                                    : &first->down;
      const bool code = field == "mx_code";
      const bool present = m0 != nullptr && !m0->empty();
      checked_offset(
          e, number,
          {present ? experts : 0, present ? m0->rows : 0, present ? (code ? m0->cols : m0->scale_cols) : 0});
      Mxfp4ExpertWeights& w = c.experts[static_cast<size_t>(e.index[0])].mx;
      Mxfp4Quantized& m = matrix == "gate" ? w.gate : matrix == "up" ? w.up : w.down;
      if (code)
        m.code(e.index[1], e.index[2]) =
            static_cast<uint8_t>(checked_integer(e, number, 0, 15, "an E2M1 code"));
      else
        m.scale(e.index[1], e.index[2]) =
            static_cast<uint8_t>(checked_integer(e, number, 0, 255, "an E8M0 byte"));
      return;
    }
    if (field == "fp8_code" || field == "fp8_scale") {
      Fp8ExpertWeights* first = experts > 0 ? &c.experts[0].fp8 : nullptr;
      const Fp8BlockQuantized* m0 = first == nullptr   ? nullptr
                                    : matrix == "gate" ? &first->gate
                                    : matrix == "up"   ? &first->up
                                                       : &first->down;
      const bool code = field == "fp8_code";
      const bool present = m0 != nullptr && !m0->empty();
      checked_offset(e, number,
                     {present ? experts : 0, present ? (code ? m0->rows : m0->scale_rows) : 0,
                      present ? (code ? m0->cols : m0->scale_cols) : 0});
      Fp8ExpertWeights& w = c.experts[static_cast<size_t>(e.index[0])].fp8;
      Fp8BlockQuantized& m = matrix == "gate" ? w.gate : matrix == "up" ? w.up : w.down;
      if (code)
        m.code(e.index[1], e.index[2]) =
            static_cast<uint8_t>(checked_integer(e, number, 0, 255, "an E4M3 byte"));
      else
        m.scale(e.index[1], e.index[2]) = static_cast<float>(e.value);
      return;
    }
    if (field == "b") {
      const auto bias_of = [&](ExpertWeights& w) -> std::vector<float>& {
        return matrix == "gate" ? w.gate_bias : matrix == "up" ? w.up_bias : w.down_bias;
      };
      const int64_t len = experts > 0 ? size_of(bias_of(c.experts[0]).size()) : 0;
      checked_offset(e, number, {len > 0 ? experts : 0, len});
      bias_of(c.experts[static_cast<size_t>(e.index[0])])[static_cast<size_t>(e.index[1])] =
          bf16_to_float(bf16_from_float(static_cast<float>(e.value)));
      return;
    }
    if (field == "global") {
      const size_t at = checked_offset(e, number, {experts});
      matrix_of(c.experts[at], matrix).global_dequant = static_cast<float>(e.value);
      return;
    }
    // Shape of this matrix (all experts share it); an empty case has no valid index.
    const Nvfp4Matrix* first = experts > 0 ? &matrix_of(c.experts[0], matrix) : nullptr;
    const int64_t rows = first ? first->rows : 0, cols = first ? first->cols : 0;
    if (field == "code") {
      checked_offset(e, number, {experts, rows, cols});
      const uint8_t code = static_cast<uint8_t>(checked_integer(e, number, 0, 15, "an E2M1 code"));
      matrix_of(c.experts[static_cast<size_t>(e.index[0])], matrix).set_code(e.index[1], e.index[2], code);
    } else if (field == "scale") {
      checked_offset(e, number, {experts, rows, cols / kNvfp4BlockSize});
      const uint8_t byte = static_cast<uint8_t>(checked_integer(e, number, 0, 255, "an E4M3 byte"));
      matrix_of(c.experts[static_cast<size_t>(e.index[0])], matrix).scale(e.index[1], e.index[2]) = byte;
    } else {
      throw InputError(fmt::format("{}: unknown tensor '{}'", describe(e, number), t));
    }
  } else {
    throw InputError(fmt::format("{}: unknown tensor '{}'", describe(e, number), t));
  }
}

void apply_edits(Case& c, std::span<const Edit> edits) {
  for (size_t n = 0; n < edits.size(); ++n) apply_edit(c, edits[n], n);
}

}  // namespace moefuzz

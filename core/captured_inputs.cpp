#include "core/captured_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/bf16.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

[[noreturn]] void fail(const SafetensorsFile& f, std::string_view name, const std::string& why) {
  throw InputError(fmt::format("{}: tensor '{}': {}", f.path(), name, why));
}

const TensorInfo& matrix(const SafetensorsFile& f, std::string_view name, std::initializer_list<SafeDtype> ok,
                         size_t rank) {
  const TensorInfo& t = f.tensor(name);
  if (std::find(ok.begin(), ok.end(), t.dtype) == ok.end())
    fail(f, name, fmt::format("dtype {} is not accepted here (docs/weights.md)", t.dtype_name));
  if (t.shape.size() != rank)
    fail(f, name, fmt::format("rank {} where {} is expected", t.shape.size(), rank));
  return t;
}

std::string_view token_ids_name(const SafetensorsFile& f) {
  return f.has("token_ids") ? "token_ids" : f.has("input_ids") ? "input_ids" : "";
}

uint64_t le(const uint8_t* p, int64_t bytes) {
  uint64_t v = 0;
  for (int64_t i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

CapturedInputsShape describe_captured_inputs(const SafetensorsFile& f) {
  CapturedInputsShape s;
  const TensorInfo& h = matrix(f, "hidden_states", {SafeDtype::kBF16, SafeDtype::kF32}, 2);
  s.tokens = h.shape[0];
  s.hidden = h.shape[1];
  if (f.has("router_logits")) {
    const TensorInfo& l = matrix(f, "router_logits", {SafeDtype::kF32, SafeDtype::kBF16}, 2);
    if (l.shape[0] != s.tokens)
      fail(f, "router_logits", fmt::format("{} tokens, but hidden_states has {}", l.shape[0], s.tokens));
    s.logit_experts = l.shape[1];
  }
  if (const auto name = token_ids_name(f); !name.empty()) {
    const TensorInfo& t = matrix(f, name, {SafeDtype::kI32, SafeDtype::kI64}, 1);
    if (t.shape[0] != s.tokens)
      fail(f, name, fmt::format("{} tokens, but hidden_states has {}", t.shape[0], s.tokens));
    s.has_token_ids = true;
  }
  return s;
}

bool load_captured_inputs(Case& c, const SafetensorsFile& f) {
  const CapturedInputsShape in = describe_captured_inputs(f);
  const Shape& s = c.recipe.shape;
  const auto need = [&](const char* what, int64_t want, int64_t have) {
    if (want > have)
      throw InputError(
          fmt::format("{}: the case asks for {} {} but the file has {}", f.path(), want, what, have));
  };
  need("tokens", s.tokens, in.tokens);
  need("hidden columns", s.hidden, in.hidden);
  {
    const TensorInfo& t = f.tensor("hidden_states");
    const int64_t dsize = safe_dtype_bytes(t.dtype);
    const auto bytes = f.read_rows(t, 0, s.tokens, 0, s.hidden * dsize);
    for (size_t i = 0; i < c.hidden.size(); ++i)
      c.hidden[i] =
          t.dtype == SafeDtype::kBF16
              ? static_cast<uint16_t>(le(bytes.data() + 2 * i, 2))
              : bf16_from_float(std::bit_cast<float>(static_cast<uint32_t>(le(bytes.data() + 4 * i, 4))));
  }
  bool logits_loaded = false;
  if (in.logit_experts > 0) {
    need("router logit columns (experts)", s.experts, in.logit_experts);
    const TensorInfo& t = f.tensor("router_logits");
    const int64_t dsize = safe_dtype_bytes(t.dtype);
    const auto bytes = f.read_rows(t, 0, s.tokens, 0, s.experts * dsize);
    for (size_t i = 0; i < c.logits.size(); ++i)
      c.logits[i] = t.dtype == SafeDtype::kF32
                        ? std::bit_cast<float>(static_cast<uint32_t>(le(bytes.data() + 4 * i, 4)))
                        : bf16_to_float(static_cast<uint16_t>(le(bytes.data() + 2 * i, 2)));
    logits_loaded = true;
  }
  if (in.has_token_ids && !c.token_ids.empty()) {
    const std::string_view name = token_ids_name(f);
    const TensorInfo& t = f.tensor(name);
    const int64_t dsize = safe_dtype_bytes(t.dtype);
    const auto bytes = f.read_rows(t, 0, s.tokens, 0, dsize);
    const int64_t vocab = c.recipe.hash_vocab();
    for (size_t i = 0; i < c.token_ids.size(); ++i) {
      const uint64_t raw = le(bytes.data() + dsize * static_cast<int64_t>(i), dsize);
      const int64_t id = dsize == 4 ? static_cast<int32_t>(raw) : static_cast<int64_t>(raw);
      if (id < 0 || id >= vocab)
        fail(f, name,
             fmt::format("token {} has id {}, outside the recipe's hash vocabulary [0, {}) (set vocab)", i,
                         id, vocab));
      c.token_ids[i] = static_cast<int32_t>(id);
    }
  }
  return logits_loaded;
}

}  // namespace moefuzz

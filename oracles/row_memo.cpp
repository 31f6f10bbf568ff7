#include "oracles/row_memo.h"

#include <string>

#include "core/content_hasher.h"
#include "core/expert_fingerprint.h"
#include "core/recipe_text.h"

namespace moefuzz {

namespace {

constexpr uint64_t kSeed = 0x726F776D656D6F31ull;  // "rowmemo1"

// What a kept row costs: its values plus about what the hash map spends per entry (node, key, bucket).
int64_t row_bytes(const OracleRowMemo::Row& r) {
  return static_cast<int64_t>(r.values.size() * sizeof(double)) + 64;
}

}  // namespace

const OracleRowMemo::Row* OracleRowMemo::find(const Key& k, bool need_intermediates) {
  const auto it = rows_.find(k);
  if (it == rows_.end() || (need_intermediates && !it->second.intermediates)) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return &it->second;
}

void OracleRowMemo::insert(const Key& k, Row row) { store(rows_, k, std::move(row)); }

const OracleRowMemo::Row* OracleRowMemo::find_gemm1(const Key& k, bool need_intermediates) {
  const auto it = gemm1_rows_.find(k);
  if (it == gemm1_rows_.end() || (need_intermediates && !it->second.intermediates)) return nullptr;
  ++gemm1_hits_;
  return &it->second;
}

void OracleRowMemo::insert_gemm1(const Key& k, Row row) { store(gemm1_rows_, k, std::move(row)); }

void OracleRowMemo::store(std::unordered_map<Key, Row, KeyHash>& map, const Key& k, Row row) {
  const auto it = map.find(k);
  if (it != map.end()) {  // replaced by the same row with its intermediates
    bytes_ -= row_bytes(it->second);
    it->second = std::move(row);
    bytes_ += row_bytes(it->second);
    return;
  }
  if (bytes_ + row_bytes(row) > max_bytes_) return;
  bytes_ += row_bytes(row);
  map.emplace(k, std::move(row));
}

OracleRowKeys::OracleRowKeys(const Case& c, const Profile& p, const LayerResult* kernel)
    : c_(c), kernel_(kernel), expert_hash_(c.experts.size()) {
  // The layer-wide inputs of a row: formats, dimensions, SwiGLU and bias flag (in the recipe's own text
  // form, so a field added there is keyed without a change here) and the profile.
  CaseRecipe layer;
  layer.profile = p.name;
  layer.shape.hidden = c.recipe.shape.hidden;
  layer.shape.inter = c.recipe.shape.inter;
  layer.quant = c.recipe.quant;
  layer.swiglu = c.recipe.swiglu;
  layer.expert_bias = c.recipe.expert_bias;
  const std::string text = to_text(layer);
  ContentHasher h(kSeed);
  h.add_bytes(text.data(), text.size());
  context_ = h.value128();
  // GEMM1 does not read the SwiGLU parameters: its context leaves them at their defaults.
  layer.swiglu = Swiglu{};
  const std::string text1 = "gemm1 " + to_text(layer);
  ContentHasher h1(kSeed);
  h1.add_bytes(text1.data(), text1.size());
  gemm1_context_ = h1.value128();
  // quantize2 conditions a bf16-activation row on the kernel's exposed activation row when the
  // exposure has the case's shape (oracles/stages/quantize2.cpp).
  const ActivationFormat af = c.recipe.quant.activations;
  activation_row_read_ = af == ActivationFormat::kBf16 && kernel != nullptr &&
                         kernel->activation.has_value() &&
                         static_cast<int64_t>(kernel->activation->size()) ==
                             c.recipe.shape.tokens * c.recipe.slots() * c.recipe.shape.inter;
}

OracleRowMemo::Key OracleRowKeys::key(int64_t token, int64_t slot, int32_t expert) {
  return row_key(token, slot, expert, /*gemm1_only=*/false);
}

OracleRowMemo::Key OracleRowKeys::gemm1_key(int64_t token, int64_t slot, int32_t expert) {
  return row_key(token, slot, expert, /*gemm1_only=*/true);
}

OracleRowMemo::Key OracleRowKeys::row_key(int64_t token, int64_t slot, int32_t expert, bool gemm1_only) {
  const size_t e = static_cast<size_t>(expert);
  if (!expert_hash_[e]) {
    ContentHasher h(kSeed);
    const Hash128 content = expert_content_hash(c_.experts, e);
    h.add_bytes(&content, sizeof content);
    const float sq[2] = {c_.a1_scale_for(expert), c_.a2_scale_for(expert)};
    h.add_bytes(sq, sizeof sq);
    expert_hash_[e] = h.value128();
  }
  const int64_t H = c_.recipe.shape.hidden, I = c_.recipe.shape.inter;
  const ActivationFormat af = c_.recipe.quant.activations;
  const bool kernel_row = kernel_ != nullptr && slot >= 0;
  ContentHasher h(kSeed);
  const Hash128& context = gemm1_only ? gemm1_context_ : context_;
  const uint64_t head[5] = {context.low, context.high, expert_hash_[e]->low, expert_hash_[e]->high,
                            static_cast<uint64_t>(slot >= 0)};
  h.add_bytes(head, sizeof head);
  h.add_bytes(c_.hidden.data() + token * H, static_cast<size_t>(H) * sizeof(uint16_t));
  // The kernel's exposures the stages read for this row, each with a presence tag.
  const auto tag = [&](bool present) {
    const uint64_t t = present ? 0x50524553454E54ull : 0x4142534E54ull;
    h.add_bytes(&t, sizeof t);
    return present;
  };
  if (af == ActivationFormat::kNvfp4) {
    for (const std::optional<QuantizedRows>* q :
         {kernel_row ? &kernel_->fc1_input : nullptr,
          kernel_row && !gemm1_only ? &kernel_->fc2_input : nullptr}) {
      if (!tag(q != nullptr && q->has_value())) continue;
      const int64_t cols = (*q)->cols;
      h.add_bytes((*q)->packed.data() + slot * (cols / 2), static_cast<size_t>(cols / 2));
      h.add_bytes((*q)->scales.data() + slot * (cols / 16), static_cast<size_t>(cols / 16));
    }
  } else if (af == ActivationFormat::kFp8Group) {
    for (const std::optional<Fp8GroupQuantized>* q :
         {kernel_row ? &kernel_->fc1_fp8 : nullptr,
          kernel_row && !gemm1_only ? &kernel_->fc2_fp8 : nullptr}) {
      if (!tag(q != nullptr && q->has_value())) continue;
      const int64_t cols = (*q)->cols, groups = (*q)->groups_per_row();
      h.add_bytes((*q)->codes.data() + slot * cols, static_cast<size_t>(cols));
      h.add_bytes((*q)->scales.data() + slot * groups, static_cast<size_t>(groups) * sizeof(float));
    }
  } else if (tag(kernel_row && activation_row_read_ && !gemm1_only)) {
    h.add_bytes(kernel_->activation->data() + slot * I, static_cast<size_t>(I) * sizeof(float));
  }
  const Hash128 k = h.value128();
  return {k.low, k.high};
}

}  // namespace moefuzz

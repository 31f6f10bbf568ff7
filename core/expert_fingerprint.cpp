#include "core/expert_fingerprint.h"

#include <unordered_map>

namespace moefuzz {

// A field added to one of these structs must be hashed below (the row memo would otherwise reuse
// rows across experts that differ in it): the sizes make the build say so.
static_assert(sizeof(Nvfp4Matrix) == 2 * sizeof(int64_t) + 2 * sizeof(std::vector<uint8_t>) + 8,
              "Nvfp4Matrix changed: hash the new field in add_expert_weights");
static_assert(sizeof(Bf16Matrix) == 2 * sizeof(int64_t) + sizeof(std::vector<uint16_t>),
              "Bf16Matrix changed: hash the new field in add_expert_weights");
static_assert(sizeof(Mxfp4Quantized) == 3 * sizeof(int64_t) + 2 * sizeof(std::vector<uint8_t>),
              "Mxfp4Quantized changed: hash the new field in add_expert_weights");
static_assert(sizeof(Fp8BlockQuantized) ==
                  4 * sizeof(int64_t) + sizeof(std::vector<uint8_t>) + sizeof(std::vector<float>),
              "Fp8BlockQuantized changed: hash the new field in add_expert_weights");
static_assert(sizeof(ExpertWeights) == 3 * sizeof(Nvfp4Matrix) + sizeof(Bf16ExpertWeights) +
                                           sizeof(Mxfp4ExpertWeights) + sizeof(Fp8ExpertWeights) +
                                           3 * sizeof(std::vector<float>),
              "ExpertWeights changed: hash the new field in add_expert_weights");

void add_expert_weights(ContentHasher& h, const ExpertWeights& e) {
  const auto shape = [&](int64_t rows, int64_t cols) {
    const int64_t dims[2] = {rows, cols};
    h.add_bytes(dims, sizeof dims);
  };
  for (const Nvfp4Matrix* m : {&e.gate, &e.up, &e.down}) {
    shape(m->rows, m->cols);
    h.add(m->packed);
    h.add(m->scales);
    h.add_bytes(&m->global_dequant, sizeof m->global_dequant);
  }
  for (const Bf16Matrix* m : {&e.bf16.gate, &e.bf16.up, &e.bf16.down}) {
    shape(m->rows, m->cols);
    h.add(m->bits);
  }
  for (const Mxfp4Quantized* m : {&e.mx.gate, &e.mx.up, &e.mx.down}) {
    shape(m->rows, m->cols);
    shape(m->scale_cols, 0);
    h.add(m->codes);
    h.add(m->scales);
  }
  for (const Fp8BlockQuantized* m : {&e.fp8.gate, &e.fp8.up, &e.fp8.down}) {
    shape(m->rows, m->cols);
    shape(m->scale_rows, m->scale_cols);
    h.add(m->codes);
    h.add(m->scales);
  }
  for (const std::vector<float>* b : {&e.gate_bias, &e.up_bias, &e.down_bias}) h.add(*b);
}

Hash128 expert_content_hash_now(const ExpertWeights& e) {
  ContentHasher h;
  add_expert_weights(h, e);
  return h.value128();
}

Hash128 expert_content_hash(const SharedVector<ExpertWeights>& experts, size_t e) {
  const auto hash = [&] { return expert_content_hash_now(experts[e]); };
  const std::optional<uint64_t> stamp = experts.content_stamp(e);
  if (!stamp) return hash();
  // Stamps are never reused, so entries of cases gone are only dead weight: the table is emptied when
  // it grows past a check's working set (a few cases of up to 4096 experts).
  constexpr size_t kMaxEntries = size_t{1} << 16;
  thread_local std::unordered_map<uint64_t, Hash128> by_stamp;
  if (const auto it = by_stamp.find(*stamp); it != by_stamp.end()) return it->second;
  if (by_stamp.size() >= kMaxEntries) by_stamp.clear();
  return by_stamp.emplace(*stamp, hash()).first->second;
}

}  // namespace moefuzz

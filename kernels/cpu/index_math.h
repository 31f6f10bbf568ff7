#pragma once
// Where the CPU pipeline's index products land (core/index_products.h): every offset of a per-row,
// per-token or per-expert buffer goes through cpu_offset, which forms the product on the logical
// index of the run's index window (RunOptions::index_window) at the width the configuration says.
// The correct pipeline forms all of them in 64 bits, so with or without a window it reads and
// writes exactly local x stride + col; an OVF mutant narrows one product to 32 bits (BUGZOO Z7).
//
// Example:
//   const int64_t at = moefuzz::cpu::cpu_offset(cfg, IndexProduct::kGemm1Out, r, 2 * I, col, rows);
#include <cstdint>
#include <vector>

#include "core/case.h"
#include "core/index_products.h"
#include "core/layer_io.h"
#include "kernels/cpu/cpu_stages.h"

namespace moefuzz::cpu {

// Unit `local` (expert, token or expanded row of this case), column `col`, of product p in a buffer
// of `extent` units x stride; -1 when a narrowed product leaves the buffer (a store there is lost).
inline int64_t cpu_offset(const CpuConfig& cfg, IndexProduct p, int64_t local, int64_t stride, int64_t col,
                          int64_t extent) {
  const IndexWidth width = cfg.dev.index_widths[static_cast<size_t>(p)];
  if (width == IndexWidth::k64) return local * stride + col;
  return window_offset(window_first_index(p, cfg.window, cfg.slots), local, stride, col, extent, width);
}

// The unit (expert, row) actually read for unit `local` of product p: `local` unless a narrowed
// product lands elsewhere. An offset outside the buffer reads memory that is not this unit's; that is
// modelled, memory-safely, as a read of unit (local + step) % extent (`step`: 1 for experts and
// top-k entries, the slots per token for expanded rows, so that the foreign row is another token's).
inline int64_t cpu_unit_read(const CpuConfig& cfg, IndexProduct p, int64_t local, int64_t stride,
                             int64_t extent, int64_t step = 1) {
  if (stride <= 0 || extent <= 0) return local;
  const int64_t at = cpu_offset(cfg, p, local, stride, 0, extent);
  return at < 0 ? (local + step) % extent : at / stride;
}

// Expanded rows grouped by the expert their top-k entry names; the entry of row r is read through the
// permutation product (a narrowed one reads another row's entry). Ids outside 0..total_experts-1 are
// skipped (their rows stay zero, as a kernel that filters expert -1 leaves them).
inline std::vector<std::vector<int64_t>> rows_by_expert(const RoutingDecision& route, int64_t total_experts,
                                                        const CpuConfig& cfg) {
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(total_experts));
  const int64_t n = route.tokens * route.slots;
  for (int64_t r = 0; r < n; ++r) {
    const int32_t e = route.ids[cpu_unit_read(cfg, IndexProduct::kPermutation, r, 1, n)];
    if (e >= 0 && e < total_experts) rows[e].push_back(r);
  }
  return rows;
}

// The expert whose slot of a per-expert arena (product p) expert e's offset lands in.
inline int64_t expert_read(const CpuConfig& cfg, IndexProduct p, int64_t e, const Case& c) {
  return cpu_unit_read(cfg, p, e, index_stride(p, c.recipe), static_cast<int64_t>(c.experts.size()));
}

}  // namespace moefuzz::cpu

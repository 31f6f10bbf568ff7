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

#include "core/index_products.h"
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

}  // namespace moefuzz::cpu

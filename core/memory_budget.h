#pragma once
// The default --max-case-bytes: a fraction of the memory available now, so a case that the machine
// can check is accepted out of the box and one that would push it into swap or the OOM killer is
// refused up front with a clear message (exit 2).
//
// Example:
//   const int64_t cap = default_max_case_bytes();  // 22 GiB available -> 5.5 GiB
//   const std::string why = check_memory_refusal(recipe, available_memory_bytes());  // "" or why not
#include <cstdint>
#include <string>

#include "core/recipe.h"

namespace moefuzz {

// Default --max-case-bytes: the case alone takes at most 1/kCheckPeakBytesPerCaseByte of the
// memory available; estimate_check_bytes below bounds the whole check (measured: qwen3_moe.moefuzz,
// a 0.34 GB case, peaked at 1.35 GB; mixtral.moefuzz, 0.79 GB, at 3.18 GB).
inline constexpr int64_t kCheckPeakBytesPerCaseByte = 4;

// Upper bound of the peak resident memory of checking one case with every invariant (bytes,
// saturating at INT64_MAX): the process itself, the cases alive together (the case, the largest
// transformed case: PAD's, zero-padded to the next multiple of 128 above H and I; and the weights a
// kernel or the oracle decodes) and every stage value of the runs alive together (the baseline's
// kernel result, its two oracle evaluations and an invariant's pair of transformed runs), per
// expanded row (token x slot, plus separate shared experts): the FC1 input H, GEMM1 2I, the
// activation I, the FC2 input I, GEMM2 H, and per token the output H and the routing. Each
// constant is in memory_budget.cpp with why it is what it is; tests/reliability/memory_test.cpp
// measures the peak (VmHWM of a child `moefuzz replay`) across the generators' shape space and
// hostile recipes and asserts peak <= estimate.
//
// Example:
//   if (estimate_check_bytes(r) > available_memory_bytes()) ...;   // refuse before allocating
int64_t estimate_check_bytes(const CaseRecipe& r);

// "" when checking `r` fits `available` bytes (<= 0: unknown, never refused), else the one-line
// reason (exit 2 before anything is allocated). A run measures `available` once, at its start, so
// which cases it refuses does not depend on what its other workers hold at the moment.
std::string check_memory_refusal(const CaseRecipe& r, int64_t available);

// MemAvailable from /proc/meminfo in bytes (the kernel's estimate of what can be allocated without
// swapping), or -1 when it cannot be read.
int64_t available_memory_bytes();

// available_memory_bytes() / kCheckPeakBytesPerCaseByte; kDefaultMaxCaseBytes (2 GiB) when the
// available memory is unknown.
int64_t default_max_case_bytes();

}  // namespace moefuzz

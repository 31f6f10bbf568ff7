#pragma once
// The default --max-case-bytes: a fraction of the memory available now, so a case that the machine
// can check is accepted out of the box and one that would push it into swap or the OOM killer is
// refused up front with a clear message (exit 2).
//
// Example:
//   const int64_t cap = default_max_case_bytes();  // 22 GiB available -> 5.5 GiB
#include <cstdint>

namespace moefuzz {

// Peak resident memory of checking one case, per byte of the case (estimate_case_bytes), measured
// with `/usr/bin/time -f %M moefuzz replay FILE --kernel cpu` on the examples: qwen3_moe.moefuzz
// (0.34 GB case) peaked at 1.35 GB (3.97x), mixtral.moefuzz (0.79 GB) at 3.18 GB (4.01x). The case,
// the kernel's and the oracle's working copies and the metamorphic invariants' transformed cases are
// alive together; 4 is that measured ratio.
inline constexpr int64_t kCheckPeakBytesPerCaseByte = 4;

// MemAvailable from /proc/meminfo in bytes (the kernel's estimate of what can be allocated without
// swapping), or -1 when it cannot be read.
int64_t available_memory_bytes();

// available_memory_bytes() / kCheckPeakBytesPerCaseByte; kDefaultMaxCaseBytes (2 GiB) when the
// available memory is unknown.
int64_t default_max_case_bytes();

}  // namespace moefuzz

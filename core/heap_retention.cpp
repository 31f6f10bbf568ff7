#include "core/heap_retention.h"

#include <cstdlib>  // defines __GLIBC__ under glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace moefuzz {

void retain_freed_heap_memory() {
#if defined(__GLIBC__)
  // Blocks up to glibc's largest mmap threshold (32 MiB on 64-bit) come from the heap and are reused;
  // larger ones (whole-case tensors of model shapes) are still mapped and unmapped. Fixing either
  // value also turns off glibc's adaptive thresholds, which kept resetting the trim point.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace moefuzz

// retain_freed_heap_memory (core/heap_retention.h): after it, a 16 MiB block (an M-shape stage record)
// comes from the heap instead of its own mapping, and freeing it keeps the memory in the process for
// the next evaluation instead of trimming it back to the kernel.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/heap_retention.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace moefuzz {
namespace {

TEST(HeapRetention, LargeBlocksComeFromTheHeapAndStayAfterFree) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc: retain_freed_heap_memory does nothing here";
#else
  retain_freed_heap_memory();
  constexpr size_t kBytes = size_t{16} << 20;
  const struct mallinfo2 before = mallinfo2();
  char* volatile block = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(block, nullptr);
  block[0] = 1;
  block[kBytes - 1] = 1;
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblkhd, before.hblkhd) << "the block was mapped on its own (glibc's default above 128 KiB)";
  EXPECT_GE(held.arena, before.arena + kBytes) << "the heap did not grow by the block";
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.fordblks, before.fordblks + kBytes) << "the freed block went back to the kernel";
#endif
}

}  // namespace
}  // namespace moefuzz

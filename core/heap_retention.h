#pragma once
// Keep freed heap memory in the process (glibc malloc) instead of handing large blocks back to the
// kernel at every free. An oracle evaluation allocates its intervals and stage records afresh, tens
// of megabytes at M shapes; after each free glibc unmapped or trimmed them, and the next evaluation
// faulted the same pages in again, zero-filled: 15% of BM_OracleLayer/M/free-device (docs/perf.md).
// The process then holds on to its peak heap (per malloc arena) until it exits. Called once at the
// start of the moefuzz CLI and the benchmarks; a no-op with other C libraries.
//
// Example:
//   int main(int argc, char** argv) { moefuzz::retain_freed_heap_memory(); ... }
namespace moefuzz {

void retain_freed_heap_memory();

}  // namespace moefuzz

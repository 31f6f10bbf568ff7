#pragma once
// GPUs for parallel checking: `moefuzz check -j N` with a GPU kernel spreads its N worker threads
// over the GPUs this process sees (CUDA_VISIBLE_DEVICES narrows them), worker w on GPU w % count,
// so every GPU of the host gets its own set of workers. The CUDA runtime keeps the current device
// per host thread: binding it at the start of the worker's thread makes every later CUDA call of
// that thread (the `cuda` kernel's pipeline) use that GPU. Without CUDA (or a GPU) both are no-ops.
//
// Example (on the worker's own thread, before its first case):
//   moefuzz::bind_worker_gpu(worker);                 // GPU worker % visible_gpu_count()
//   auto k = moefuzz::make_kernel("cuda");
namespace moefuzz {

// CUDA devices this process sees; 0 without CUDA, driver or GPU.
int visible_gpu_count();
// Makes GPU `worker % visible_gpu_count()` the calling thread's current CUDA device; returns its
// ordinal, or -1 when there is no GPU (nothing is bound). Throws std::runtime_error when CUDA refuses.
int bind_worker_gpu(int worker);

// How a host thread waits for its GPU (a stream synchronization, a copy to pageable memory).
enum class GpuWait {
  kSpin,   // polls without giving up its core: the CUDA default while a process has no more contexts
           // than cores, the shortest wait when every waiting thread has a core of its own
  kYield,  // polls but yields its core between polls: when there are more waiting threads than cores,
           // a spinning worker would take the core another worker has work for
};
// Sets how every thread of this process waits for each visible GPU (their primary contexts' flags);
// before the workers start. Without CUDA (or a GPU) a no-op. Throws std::runtime_error when CUDA refuses.
void set_gpu_wait(GpuWait wait);

}  // namespace moefuzz

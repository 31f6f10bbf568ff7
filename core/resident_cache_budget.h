#pragma once
// How much of a GPU's memory one worker thread may keep in a resident cache. Each worker of a check
// on a GPU kernel keeps two: the `cuda` kernel's expert copies (kernels/cuda/resident_experts.h) and
// the GPU oracle's weight copies (oracles/gpu/gpu_exact_dots.h). Each gets
// min(1 GiB, total / (4 x max(16, workers on the GPU))): up to 16 workers per GPU 1/64 of it each, and
// with more workers proportionally less, so that all caches together keep at most half of every GPU
// whatever `check -j` is (the runs' buffers need the rest).
//
// Example:
//   moefuzz::set_workers_per_gpu(32);                              // check -j 32 on one GPU, at start
//   size_t cap = moefuzz::resident_cache_bytes(total_device_bytes);  // 1/128 of the GPU, at most 1 GiB
#include <cstddef>

namespace moefuzz {

// The most workers any one GPU of this process serves (set once, before the workers start; default 1).
void set_workers_per_gpu(int workers);
int workers_per_gpu();

// One resident cache's capacity on a GPU of `total_bytes`, for workers_per_gpu() workers.
size_t resident_cache_bytes(size_t total_bytes);

}  // namespace moefuzz

// Without CUDA there is no GPU to bind (kernels/cuda/worker_device.cu is the CUDA build's).
#include "kernels/worker_device.h"

namespace moefuzz {
#ifndef MOEFUZZ_WITH_CUDA
int visible_gpu_count() { return 0; }
int bind_worker_gpu(int) { return -1; }
void set_gpu_wait(GpuWait) {}
#endif
}  // namespace moefuzz

// The CUDA mutant classes: the `cuda` pipeline with one deliberate device-side bug each
// (moe_pipeline.h, CudaDeviation), registered as `cuda-mutant/...` with the invariants that must
// kill them. They are the GPU counterparts of the CPU zoo (kernels/mutants/): the CPU mutants show
// the invariants have teeth on the CPU pipeline; these show the same on the code that runs on the
// device (docs/gpu.md records the kill run on the H200).
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/registry.h"

namespace moefuzz {

void add_cuda_mutants(std::vector<KernelEntry>& out) {
  struct M {
    const char* name;
    const char* description;
    uint32_t deviation;
    std::vector<std::string> killers;
  };
  const M mutants[] = {
      // BUGZOO Z1 (vLLM #45037): rsf in top-k and again in the combine -> x s^2.
      {"cuda-mutant/z1-rsf-twice",
       "BUGZOO Z1 on the GPU: routed scale applied in top-k and again in the combine",
       cuda::kDevRsfTwice,
       {"SCALE1", "ORACLE"}},
      // BUGZOO Z7 (SGLang #4727): GEMM offsets in int32. Identical to `cuda` below 2^31 elements, so
      // only the OVF tier (expert stride x expert crossing 2^31) can kill it.
      {"cuda-mutant/z7-int32-offsets",
       "BUGZOO Z7 on the GPU: GEMM expert/row element offsets wrap at 2^31",
       cuda::kDevInt32Offsets,
       {"OVF"}},
      // Producer/consumer nibble-order mismatch: the GEMM decodes weight bytes high nibble first.
      {"cuda-mutant/fp4-nibble-swap",
       "format: the GPU GEMM decodes packed E2M1 weights high nibble first",
       cuda::kDevNibbleSwap,
       {"ORACLE"}},
  };
  for (const M& m : mutants) {
    CudaKernelSpec spec{
        .name = m.name, .description = m.description, .deviation = m.deviation, .killers = m.killers};
    out.push_back({m.name, KernelKind::kCuda, [spec] { return make_cuda_kernel(spec); }});
  }
}

}  // namespace moefuzz

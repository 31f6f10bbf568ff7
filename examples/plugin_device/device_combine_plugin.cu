/*
 * Example device-memory plugin (wants_device = 1): the combine stage as a CUDA kernel, every other
 * stage composed with moefuzz's CPU pipeline. Claims sglang-cutlass-fp4: each slot's term is
 * bf16(y * bf16(w)), summed in slot order in fp32, times rsf when the claimed profile's top-k did not
 * apply it, rounded to bf16 (SPEC.md 3.6). All pointers are device pointers on c->device_ordinal; the
 * kernel is launched on c->stream and moefuzz synchronizes it.
 *
 * Build:  nvcc -O2 --fmad=false -Xcompiler -fPIC -shared -I<moefuzz>/include device_combine_plugin.cu \
 *           -o libdevice_combine.so
 * Run:    moefuzz check --kernel ./libdevice_combine.so --cases 50
 *
 * --fmad=false: y * w must be rounded before the add, as the contract says; a contracted FMA is a
 * different rounding point.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "moefuzz/plugin.h"

/* Round to nearest even bf16, returned as the fp32 value (NaN stays NaN). */
__device__ float round_bf16(float x) {
  uint32_t b = __float_as_uint(x);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0) return x;
  b += 0x7FFFu + ((b >> 16) & 1u);
  return __uint_as_float(b & 0xFFFF0000u);
}

/* One thread per output element (t, h). */
__global__ void combine_kernel(const float* gemm2, const int32_t* ids, const float* weights, int64_t tokens,
                               int64_t slots, int64_t hidden, float scale, float* out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= tokens * hidden) return;
  const int64_t t = i / hidden, h = i % hidden;
  float acc = 0.0f;
  for (int64_t s = 0; s < slots; ++s) {
    (void)ids; /* the rows are already expanded per (token, slot) */
    const float w = weights[t * slots + s];
    acc = acc + round_bf16(gemm2[(t * slots + s) * hidden + h] * round_bf16(w));
  }
  out[i] = round_bf16(acc * scale);
}

static const char* combine_supports(const moefuzz_case_desc* c) {
  if (c->tokens * c->hidden > (int64_t)1 << 40) return "output too large";
  return NULL;
}

static const char* device_combine(const moefuzz_case_desc* c, const moefuzz_tensor* gemm2,
                                  const moefuzz_tensor* ids, const moefuzz_tensor* weights,
                                  moefuzz_tensor* output) {
  const int64_t n = c->tokens * c->hidden;
  const float scale = c->rsf_in_topk ? 1.0f : c->routed_scaling_factor;
  if (!c->device) return "expected device buffers";
  if (n == 0) return NULL;
  combine_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)c->stream>>>(
      (const float*)gemm2->data, (const int32_t*)ids->data, (const float*)weights->data, c->tokens,
      ids->shape[1], c->hidden, scale, (float*)output->data);
  return cudaGetLastError() == cudaSuccess ? NULL : "combine launch failed";
}

static const moefuzz_plugin_v1 kPlugin = {
    MOEFUZZ_PLUGIN_ABI_VERSION,
    sizeof(moefuzz_plugin_v1),
    "device-combine",
    "sglang-cutlass-fp4",
    "CUDA combine, bf16(y * bf16(w)) summed in slot order (device buffers)",
    1,
    1,
    1, /* deterministic, batch_invariant, tactics */
    MOEFUZZ_STAGE_COMBINE,
    1, /* stages implemented, device buffers: yes */
    combine_supports,
    NULL,
    NULL, /* supports, layer, route */
    NULL,
    NULL,
    NULL,
    NULL,
    device_combine};

extern "C" MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kPlugin; }

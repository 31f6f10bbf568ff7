/*
 * Misbehaving device-memory plugins for tests/gpu/device_plugin_test.cpp (not an example to copy:
 * see device_combine_plugin.cu). The combine of device_combine_plugin.cu with one fault, chosen by
 * MOEFUZZ_DEVICE_FAULT at build time:
 *   1 unwritten: the last output element is never stored (it must keep the poison)
 *   2 overhang:  one store 5 floats past the output's end (into the sentinel band)
 *   3 input:     writes into its gemm2 input after reading it
 *   4 illegal:   a store far outside any allocation (illegal address)
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "moefuzz/plugin.h"

#ifndef MOEFUZZ_DEVICE_FAULT
#error "define MOEFUZZ_DEVICE_FAULT"
#endif

__device__ float round_bf16(float x) {
  uint32_t b = __float_as_uint(x);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0) return x;
  b += 0x7FFFu + ((b >> 16) & 1u);
  return __uint_as_float(b & 0xFFFF0000u);
}

__global__ void combine_kernel(float* gemm2, const float* weights, int64_t tokens, int64_t slots,
                               int64_t hidden, float scale, float* out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t n = tokens * hidden;
  if (i >= n) return;
  const int64_t t = i / hidden, h = i % hidden;
  float acc = 0.0f;
  for (int64_t s = 0; s < slots; ++s)
    acc = acc + round_bf16(gemm2[(t * slots + s) * hidden + h] * round_bf16(weights[t * slots + s]));
#if MOEFUZZ_DEVICE_FAULT == 1
  if (i == n - 1) return;
#endif
  out[i] = round_bf16(acc * scale);
#if MOEFUZZ_DEVICE_FAULT == 2
  if (i == n - 1) out[n + 4] = 0.0f;
#elif MOEFUZZ_DEVICE_FAULT == 3
  if (i == 0) gemm2[0] = gemm2[0] + 1.0f;
#elif MOEFUZZ_DEVICE_FAULT == 4
  if (i == 0) out[(int64_t)1 << 40] = 1.0f;
#endif
}

static const char* faulty_combine(const moefuzz_case_desc* c, const moefuzz_tensor* gemm2,
                                  const moefuzz_tensor* ids, const moefuzz_tensor* weights,
                                  moefuzz_tensor* output) {
  const int64_t n = c->tokens * c->hidden;
  const float scale = c->rsf_in_topk ? 1.0f : c->routed_scaling_factor;
  if (n == 0) return NULL;
  combine_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)c->stream>>>(
      (float*)gemm2->data, (const float*)weights->data, c->tokens, ids->shape[1], c->hidden, scale,
      (float*)output->data);
  return NULL;
}

static const moefuzz_plugin_v1 kPlugin = {MOEFUZZ_PLUGIN_ABI_VERSION,
                                          sizeof(moefuzz_plugin_v1),
                                          "faulty-device-combine",
                                          "sglang-cutlass-fp4",
                                          "device combine with a deliberate fault",
                                          1,
                                          1,
                                          1,
                                          MOEFUZZ_STAGE_COMBINE,
                                          1,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          faulty_combine};

extern "C" MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kPlugin; }

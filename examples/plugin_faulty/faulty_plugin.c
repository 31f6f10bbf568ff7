/*
 * Misbehaving plugins for tests/kernels/plugin_test.cpp: one source, one library per fault,
 * selected by MOEFUZZ_FAULT at compile time (examples/plugin_faulty/CMakeLists.txt). Each fault is
 * something a real out-of-tree kernel does: crash, hang, exit, report an error, ship the wrong ABI,
 * forget the export, leave a field NULL, emit ids that are not experts, ask for device buffers, crash in
 * supports(), be killed for memory, write NaN, write into its input. FAULT_PATTERN
 * is the well-behaved control: a whole-layer kernel whose output is a known function of the indices, so the
 * test can check that results cross the process boundary bit for bit.
 */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "moefuzz/plugin.h"

#define FAULT_PATTERN 1
#define FAULT_CRASH 2
#define FAULT_HANG 3
#define FAULT_EXIT 4
#define FAULT_ERROR 5
#define FAULT_ABI 6
#define FAULT_NO_SYMBOL 7
#define FAULT_NULL_NAME 8
#define FAULT_ENTRY_CRASH 9
#define FAULT_BAD_IDS 10
#define FAULT_SUPPORTS_HANG 11
#define FAULT_DEVICE 12
#define FAULT_SUPPORTS_CRASH 13
#define FAULT_OOM 14
#define FAULT_NAN 15
#define FAULT_INPUT_WRITE 16

#ifndef MOEFUZZ_FAULT
#error "compile with -DMOEFUZZ_FAULT=<one of the FAULT_ values>"
#endif

/* The pattern: output[t][h] = t * 1000 + h + 0.25, ids[t][s] = s, weights[t][s] = 1 / slots. */
static void write_pattern(const moefuzz_case_desc* c, moefuzz_layer_out* out) {
  int64_t t, h, s;
  for (t = 0; t < c->tokens; ++t) {
    float* y = (float*)out->output.data + t * out->output.strides[0];
    int32_t* id = (int32_t*)out->topk_ids.data + t * out->topk_ids.strides[0];
    float* w = (float*)out->topk_weights.data + t * out->topk_weights.strides[0];
    for (h = 0; h < c->hidden; ++h) y[h] = (float)(t * 1000 + h) + 0.25f;
    for (s = 0; s < c->slots; ++s) {
      id[s] = (int32_t)s;
      w[s] = 1.0f / (float)c->slots;
    }
  }
}

static const char* faulty_layer(const moefuzz_case_desc* c, moefuzz_layer_out* out) {
#if MOEFUZZ_FAULT == FAULT_CRASH
  volatile int* nowhere = NULL;
  (void)out;
  if (c->tokens > 0) *nowhere = 1; /* SIGSEGV */
  write_pattern(c, out);
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_HANG
  volatile unsigned long spin = 0;
  while (c->tokens > 0) ++spin; /* a kernel that never returns */
  write_pattern(c, out);
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_EXIT
  if (c->tokens > 0) _exit(0); /* leaves without a result */
  write_pattern(c, out);
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_ERROR
  if (c->tokens > 0) return "deliberate failure: workspace too small";
  write_pattern(c, out);
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_OOM
  /* What the out-of-memory killer does to a kernel that allocates past the machine: SIGKILL. Raised
   * here directly so the test never pushes a shared machine into real memory pressure. */
  if (c->tokens > 0) kill(getpid(), SIGKILL);
  write_pattern(c, out);
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_NAN
  /* Runs and returns, with NaN everywhere: an output to compare, so a finding of the invariants. */
  write_pattern(c, out);
  {
    int64_t t, h;
    for (t = 0; t < c->tokens; ++t)
      for (h = 0; h < c->hidden; ++h) ((float*)out->output.data)[t * out->output.strides[0] + h] = NAN;
  }
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_INPUT_WRITE
  /* Scribbles over its input (a kernel using the hidden states as scratch space), then answers. */
  if (c->tokens > 0) ((uint16_t*)c->hidden_states.data)[0] ^= 0x4000u;
  write_pattern(c, out);
  return NULL;
#else
  write_pattern(c, out);
  return NULL;
#endif
}

/* Stage plugin whose routing emits an expert id that does not exist. */
static const char* bad_ids_route(const moefuzz_case_desc* c, moefuzz_tensor* ids, moefuzz_tensor* w) {
  int64_t t, s;
  for (t = 0; t < c->tokens; ++t)
    for (s = 0; s < c->slots; ++s) {
      ((int32_t*)ids->data)[t * ids->strides[0] + s] = (int32_t)(c->experts + c->shared_experts + 7);
      ((float*)w->data)[t * w->strides[0] + s] = 1.0f;
    }
  return NULL;
}

static const char* faulty_supports(const moefuzz_case_desc* c) {
#if MOEFUZZ_FAULT == FAULT_SUPPORTS_HANG
  volatile unsigned long spin = 0;
  while (c->tokens > 0) ++spin;
  return NULL;
#elif MOEFUZZ_FAULT == FAULT_SUPPORTS_CRASH
  volatile int* nowhere = NULL;
  if (c->tokens > 0) *nowhere = 1; /* SIGSEGV */
  return NULL;
#else
  return c->tokens > 64 ? "more than 64 tokens" : NULL;
#endif
}

static const moefuzz_plugin_v1 kFaultyPlugin = {
#if MOEFUZZ_FAULT == FAULT_ABI
    MOEFUZZ_PLUGIN_ABI_VERSION + 98,
#else
    MOEFUZZ_PLUGIN_ABI_VERSION,
#endif
    sizeof(moefuzz_plugin_v1),
#if MOEFUZZ_FAULT == FAULT_NULL_NAME
    NULL,
#else
    "faulty",
#endif
    "flashinfer-cutlass",
    "a misbehaving test plugin (examples/plugin_faulty)",
    1,
    1,
    1,
#if MOEFUZZ_FAULT == FAULT_BAD_IDS
    MOEFUZZ_STAGE_ROUTE,
#else
    MOEFUZZ_STAGE_LAYER,
#endif
#if MOEFUZZ_FAULT == FAULT_DEVICE
    1, /* wants device buffers */
#else
    0,
#endif
    faulty_supports,
    faulty_layer,
    bad_ids_route, /* the stage bits say which one is used */
    NULL,
    NULL,
    NULL,
    NULL,
    NULL};

#if MOEFUZZ_FAULT == FAULT_NO_SYMBOL
/* Forgot the entry point: exports a differently named function. */
MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry_v0(void) { return &kFaultyPlugin; }
#elif MOEFUZZ_FAULT == FAULT_ENTRY_CRASH
MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) {
  volatile const moefuzz_plugin_v1* volatile nowhere = NULL;
  if (nowhere->abi_version == 0) return NULL; /* SIGSEGV while loading */
  return &kFaultyPlugin;
}
#else
MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kFaultyPlugin; }
#endif

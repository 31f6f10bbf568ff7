#pragma once
// Every tensor of one expert's weights (all formats, biases, shapes and the NVFP4 global dequant
// scales) fed to a ContentHasher: the one place that knows what an expert's content is. CANARY's input
// fingerprint (kernels/canary.h), the Python kernels' weight cache keys (kernels/python_kernel.h) and
// the oracle's row memo (oracles/row_memo.h), which reuses rows across cases whose experts carry the
// same content under other indices, and the `cuda` kernel's resident device copies
// (kernels/cuda/resident_experts.h) all read it.
//
// Example:
//   moefuzz::ContentHasher h;
//   moefuzz::add_expert_weights(h, c.experts[e]);
//   uint64_t key = h.value();
#include "core/case.h"
#include "core/content_hasher.h"

namespace moefuzz {

void add_expert_weights(ContentHasher& h, const ExpertWeights& e);

}  // namespace moefuzz

#pragma once
// Every tensor of one expert's weights (all formats, biases, shapes and the NVFP4 global dequant
// scales) fed to a ContentHasher: the one place that knows what an expert's content is. CANARY's input
// fingerprint (kernels/canary.h), the Python kernels' weight cache keys (kernels/python_kernel.h) and
// the oracle's row memo (oracles/row_memo.h), which reuses rows across cases whose experts carry the
// same content under other indices, and the `cuda` kernel's resident device copies
// (kernels/cuda/resident_experts.h) all read it.
//
// expert_content_hash is the same content as one 128-bit value, remembered per thread under the
// element's content stamp (core/shared_vector.h) while the element cannot change: a check's ~20 kernel
// runs per case hash each shared expert once instead of once per run. A kernel's writes through const
// pointers change no stamp, so what must see them (CANARY after a run) reads the bytes again:
// expert_content_hash_now.
//
// Example:
//   moefuzz::ContentHasher h;
//   moefuzz::add_expert_weights(h, c.experts[e]);
//   uint64_t key = h.value();
//   moefuzz::Hash128 same_content = moefuzz::expert_content_hash(c.experts, e);
#include "core/case.h"
#include "core/content_hasher.h"

namespace moefuzz {

void add_expert_weights(ContentHasher& h, const ExpertWeights& e);

// ContentHasher's value128() of add_expert_weights(experts[e]) alone (seed 0).
Hash128 expert_content_hash(const SharedVector<ExpertWeights>& experts, size_t e);
// The same value from the bytes as they are now, never remembered.
Hash128 expert_content_hash_now(const ExpertWeights& e);

}  // namespace moefuzz

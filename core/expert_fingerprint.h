#pragma once
// Every tensor of one expert's weights (all formats, biases, shapes and the NVFP4 global dequant
// scales) fed to a WordHash: the one place that knows what an expert's content is. CANARY's input
// fingerprint (kernels/canary.h) and the oracle's row memo (oracles/row_memo.h), which reuses rows
// across cases whose experts carry the same content under other indices, both read it.
//
// Example:
//   moefuzz::WordHash h;
//   moefuzz::add_expert_weights(h, c.experts[e]);
//   uint64_t key = h.value();
#include "core/case.h"
#include "core/word_hash.h"

namespace moefuzz {

void add_expert_weights(WordHash& h, const ExpertWeights& e);

}  // namespace moefuzz

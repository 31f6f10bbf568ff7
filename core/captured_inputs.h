#pragma once
// Captured layer inputs (a safetensors file) as a case's inputs (docs/weights.md):
//   hidden_states  [T, H]  BF16 (F32 is rounded to bf16, nearest-even)    required
//   router_logits  [T, E]  F32 or BF16                                    optional
//   token_ids      [T]     I32 or I64 (also accepted as input_ids)        optional, hash routing
// A case takes tokens 0..T'-1, hidden columns 0..H'-1 and logit columns 0..E'-1 of its shape;
// token ids must lie below the recipe's hash vocabulary. Each problem is an InputError naming the
// file and the tensor.
//
// Example:
//   moefuzz::SafetensorsFile f("captured.safetensors");
//   bool logits_given = moefuzz::load_captured_inputs(c, f);   // c.hidden, c.logits, c.token_ids
#include "core/case.h"
#include "core/safetensors.h"

namespace moefuzz {

// What a captured-inputs file holds (from its header): the token count and which optional tensors.
struct CapturedInputsShape {
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t logit_experts = 0;  // 0 = no router_logits
  bool has_token_ids = false;
};
CapturedInputsShape describe_captured_inputs(const SafetensorsFile& f);

// Overwrites c.hidden, c.logits (when the file has router_logits) and c.token_ids (when the case
// routes by hash and the file has token ids). Returns whether the logits came from the file.
bool load_captured_inputs(Case& c, const SafetensorsFile& f);

}  // namespace moefuzz

#pragma once
// Case: the materialized tensors of a CaseRecipe. Same recipe -> same bytes on every machine and
// build type (counter-based streams, core/rng.h; pinned by golden hashes in tests/core).
//
// Expert weights are stored in SEMANTIC form (gate, up, down as separate matrices); a kernel applies
// its backend's w13 order ([gate; up] or [up; gate]) when it builds its own inputs. They are NVFP4,
// bf16, MXFP4 or FP8 block-scaled, as the recipe's weight_format says; the other formats' matrices are
// empty. FP8 W8A8 activations are quantized by the kernel (dynamic, per token group): a case holds no
// activation codes for them, and a1_scale / a2_scale are unused.
//
// Example:
//   moefuzz::CaseRecipe r = moefuzz::parse_recipe_file("corpora/examples/deepseek_v3.moefuzz");
//   moefuzz::Case c = moefuzz::materialize(r);
//   float x = moefuzz::bf16_to_float(c.hidden[t * r.shape.hidden + h]);
//   float w = c.experts[e].gate.dequant(i, h);
//
// Edit targets (Edit::tensor, index dims, value meaning):
//   hidden [t, h] value (rounded to bf16)     logits [t, e] fp32     bias [e] fp32
//   token_ids [t] int                         hash_table [row, slot] int
//   gate.code / up.code / down.code [expert, row, col] E2M1 code (0..15)
//   gate.scale / up.scale / down.scale [expert, row, block] E4M3 byte (0..255)
//   gate.global / up.global / down.global [expert] S_d (fp32)
//   a1_scale / a2_scale [expert or 0] S_q (fp32)
//   gate.w / up.w / down.w [expert, row, col] bf16 weight (weight_format bf16; rounded to bf16)
//   gate.mx_code / up.mx_code / down.mx_code [expert, row, col] E2M1 code 0..15 (weight_format mxfp4)
//   gate.mx_scale / up.mx_scale / down.mx_scale [expert, row, block of 32] E8M0 byte 0..255 (mxfp4)
//   gate.fp8_code / up.fp8_code / down.fp8_code [expert, row, col] E4M3 byte 0..255 (fp8_block)
//   gate.fp8_scale / up.fp8_scale / down.fp8_scale [expert, row block, col block] fp32 (fp8_block)
//   gate.b / up.b [expert, row of I] / down.b [expert, row of H] bias (expert_bias; rounded to bf16)
#include <cstdint>
#include <string>
#include <vector>

#include "core/bf16_matrix.h"
#include "core/fp8_block_quant.h"
#include "core/mxfp4.h"
#include "core/nvfp4.h"
#include "core/recipe.h"
#include "core/shared_vector.h"

namespace moefuzz {

// bf16 expert weights (weight_format bf16), same shapes as the NVFP4 ones.
struct Bf16ExpertWeights {
  Bf16Matrix gate;  // [I, H]
  Bf16Matrix up;    // [I, H]
  Bf16Matrix down;  // [H, I]
  bool operator==(const Bf16ExpertWeights&) const = default;
};

// MXFP4 expert weights (weight_format mxfp4): E2M1 codes (one a byte) and one E8M0 scale per 32
// elements of a row (core/mxfp4.h), same shapes as the NVFP4 ones; value = e2m1 * 2^(scale - 127).
struct Mxfp4ExpertWeights {
  Mxfp4Quantized gate;  // [I, H], scales [I, H/32]
  Mxfp4Quantized up;    // [I, H]
  Mxfp4Quantized down;  // [H, I], scales [H, I/32]
  bool operator==(const Mxfp4ExpertWeights&) const = default;
};

// FP8 block-scaled expert weights (weight_format fp8_block, DeepSeek-V3 FP8): E4M3 codes and one fp32
// scale per 128x128 block (core/fp8_block_quant.h; a multiplier: value = e4m3 * scale), same shapes as
// the NVFP4 ones. H and I are multiples of 128 (validate()), so no block is partial.
struct Fp8ExpertWeights {
  Fp8BlockQuantized gate;  // [I, H], scales [I/128, H/128]
  Fp8BlockQuantized up;    // [I, H]
  Fp8BlockQuantized down;  // [H, I], scales [H/128, I/128]
  bool operator==(const Fp8ExpertWeights&) const = default;
};

struct ExpertWeights {
  Nvfp4Matrix gate;        // [I, H]; empty unless weight_format nvfp4
  Nvfp4Matrix up;          // [I, H]
  Nvfp4Matrix down;        // [H, I]
  Bf16ExpertWeights bf16;  // empty unless weight_format bf16
  Mxfp4ExpertWeights mx;   // empty unless weight_format mxfp4
  Fp8ExpertWeights fp8;    // empty unless weight_format fp8_block
  // Biases (recipe expert_bias; empty otherwise): bf16 values as fp32, added to the GEMM's fp32
  // accumulator before its rounding point. gate_bias and up_bias [I] (gpt-oss's interleaved b1, split),
  // down_bias [H] (b2, before the routing weight).
  std::vector<float> gate_bias, up_bias, down_bias;
  bool operator==(const ExpertWeights&) const = default;
};

struct Case {
  CaseRecipe recipe;
  std::vector<uint16_t> hidden;     // bf16 bits, [T, H]
  std::vector<float> logits;        // router logits (the router GEMM is not under test), [T, E]
  std::vector<float> bias;          // e_score_correction_bias [E]; empty unless sigmoid + bias
  std::vector<int32_t> token_ids;   // [T], hash routing only
  std::vector<int32_t> hash_table;  // tid2eid [vocab, k], hash routing only
  // [E + shared_experts]: routed 0..E-1, then shared. Copies of a case share the experts neither
  // changes (core/shared_vector.h): changing an expert through a mutable reference copies it first.
  SharedVector<ExpertWeights> experts;
  // Activation global QUANTIZATION scales S_q (SPEC.md §1.4): size 1 (global) or E + shared.
  std::vector<float> a1_scale;  // layer input (FC1 input)
  std::vector<float> a2_scale;  // FC2 input
  bool operator==(const Case&) const = default;

  float a1_scale_for(int64_t expert) const {
    return a1_scale.size() == 1 ? a1_scale[0] : a1_scale[static_cast<size_t>(expert)];
  }
  float a2_scale_for(int64_t expert) const {
    return a2_scale.size() == 1 ? a2_scale[0] : a2_scale[static_cast<size_t>(expert)];
  }
};

// Deterministic materialization. Throws InputError (core/errors.h) if the recipe is invalid or its
// estimate exceeds max_bytes; nothing large is allocated before that check.
Case materialize(const CaseRecipe& recipe, int64_t max_bytes = kDefaultMaxCaseBytes);

// SHA-256-free content hash (64-bit FNV-1a over every byte of every tensor, in a fixed order), used
// to pin determinism with golden values.
uint64_t content_hash(const Case& c);

}  // namespace moefuzz

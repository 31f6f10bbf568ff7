#pragma once
// Stages "quantize" (FC1 input, SPEC.md §3.7 step 1) and "quantize2" (FC2 input, step 4): the NVFP4
// quantization of an expert's input rows. Expected value: the envelope of every code and block scale
// a correct quantizer under the profile may produce from an input inside its interval
// (oracles/bounds.h nvfp4_envelope). Admissibility: codes the kernel exposes must lie in that envelope
// (stage "fc1_quant" / "fc2_quant"), and are then used as given; codes it does not expose are
// covered instead (each element's flip radius widens the following GEMM's bound). W4A16 layers
// quantize nothing: their FC1 input is the bf16 hidden row, their FC2 input the activation interval.
//
// Example:
//   moefuzz::stages::Fc1Memo memo(c);
//   moefuzz::stages::Fc1Input in = moefuzz::stages::quantize_fc1(c, rows, sq1, &kernel.fc1_input, memo);
//   if (!in.admissibility.passed()) return in.admissibility;   // the kernel's codes are inadmissible
#include <optional>
#include <span>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/verdict.h"
#include "oracles/stages/fp8_operands.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// Throws InputError when the kernel's exposed quantized rows do not have the case's shape.
void check_exposed_shape(const std::optional<QuantizedRows>& q, int64_t rows, int64_t cols, const char* what);
// An FP8 exposure of the wrong shape (rows, cols, a group other than 128, array sizes) is the kernel's
// fault, not a bad input: a failed verdict of `stage` (pass when absent or well-shaped).
Verdict check_exposed_fp8_shape(const std::optional<Fp8GroupQuantized>& q, int64_t rows, int64_t cols,
                                const char* stage);

// FP8 W8A8 (activations fp8_group): the profile's quantizer model and the kernel's exposed rows
// ([kernel rows, K], nullptr or empty: none). FP8 layers fill Fc1Input::fp8 / Fc2Input::fp8
// (oracles/stages/fp8_operands.h); an inadmissible exposure fails "fc1_quant" / "fc2_quant".
struct Fp8Quantization {
  Fp8ActQuantModel model;
  const std::optional<Fp8GroupQuantized>* exposed = nullptr;
};

// FC1 envelopes of the tokens (the FC1 input of a token is the same point for each of its rows: one
// envelope, and one set of unconditioned flips, per token and quantization scale), kept up to 2^23
// elements of [T, H] (~18 bytes per element).
class Fc1Memo {
 public:
  explicit Fc1Memo(const Case& c);
  struct Token {
    bool have = false, have_flips = false;
    float sq = 0;
    Nvfp4Envelope env;
    std::vector<std::pair<int32_t, double>> flips;
    // The kernel's codes and block scales already admitted for one of the token's rows at
    // admitted_sq: a row of the token with the same bytes and scale is admitted without the scan.
    bool have_admitted = false;
    float admitted_sq = 0;
    std::vector<uint8_t> admitted_packed, admitted_scales;
  };
  Token& token(int64_t t, Token& scratch) { return memo_ ? tokens_[static_cast<size_t>(t)] : scratch; }

 private:
  bool memo_ = false;
  std::vector<Token> tokens_;
};

struct Fc1Input {
  Verdict admissibility = Verdict::pass("ORACLE", "fc1_quant");
  QuantizedInputs quantized;  // W4A4
  std::vector<float> bf16;    // W4A16: n * H point rows
  Fp8Operands fp8{0, 0};      // W8A8: n * H
};
// kernel_codes: the kernel's exposed FC1 input (nullptr or empty: none).
Fc1Input quantize_fc1(const Case& c, const ExpertRows& rows, float sq1,
                      const std::optional<QuantizedRows>* kernel_codes, Fc1Memo& memo,
                      const Fp8Quantization& fp8 = {});

struct Fc2Input {
  Verdict admissibility = Verdict::pass("ORACLE", "fc2_quant");
  QuantizedInputs quantized;  // W4A4
  Bf16Operands fp32;          // W4A16: the interval's fp32 center plus a radius covering the rest
  Fp8Operands fp8{0, 0};      // W8A8: n * I
};
// W4A16 and bf16 weights quantize nothing: a row whose activation values the kernel exposes
// (`kernel_activation`, [kernel rows, I]) and that all lie in the row's activation interval is
// conditioned on them (the GEMM2 operand is the kernel's point row, radius 0), as exposed FC2 codes
// are in W4A4; otherwise the interval's center and radius are carried. A value outside its interval
// is the activation stage's failure, found by its comparison; such a row is not conditioned.
Fc2Input quantize_fc2(const Case& c, const ExpertRows& rows, float sq2, const ActivationRows& h,
                      const std::optional<QuantizedRows>* kernel_codes,
                      const std::optional<std::vector<float>>* kernel_activation = nullptr,
                      const Fp8Quantization& fp8 = {});

}  // namespace moefuzz::stages
